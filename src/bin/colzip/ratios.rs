//! The sizes and ratios `colzip compress` and `colzip info` print, each named.
//!
//! Two ratios answer two questions. The *file ratio* (input file bytes / archive file
//! bytes) is the one users compare with gzip or zstd: how much smaller the file got. The
//! *plain ratio* (the columns' plain bytes / archive file bytes) is what `colzip_ratio`
//! divides: for a Parquet input, whose file is itself compressed, it is much higher than
//! the file ratio, so printing it alone reads as a promise the file sizes do not keep.

use colzip::archive::ArchiveInfo;

/// The sizes a compression reports.
pub struct Sizes {
    /// The input file's bytes: as read, when the input is standard input (`None` when its
    /// size could not be read).
    pub input: Option<u64>,
    /// The plain bytes of its columns (what `colzip info` and `colzip_ratio` divide).
    pub plain: u64,
    /// The archive file's bytes.
    pub archive: u64,
}

/// `numerator / denominator`, an empty denominator counting as one byte so that an empty
/// archive gives a number rather than infinity.
fn ratio(numerator: u64, denominator: u64) -> f64 {
    numerator as f64 / denominator.max(1) as f64
}

/// Bytes in decimal units with three significant figures or so (`19.1 MB`), as file
/// managers and `ls -h --si` show file sizes; exact counts are in the JSON output.
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1000.0 {
            break;
        }
        value /= 1000.0;
        unit = next;
    }
    format!("{value:.1} {unit}")
}

/// How much smaller the file got, in words: `1.47x smaller`, or `1.05x larger` for an
/// input that does not compress (a ratio below one reads badly as "smaller").
fn change(file_ratio: f64) -> String {
    if file_ratio >= 1.0 {
        format!("{file_ratio:.2}x smaller")
    } else {
        format!("{:.2}x larger", 1.0 / file_ratio)
    }
}

/// A compression's summary line: the file ratio first (when the input's size is known),
/// then the plain ratio.
pub fn summary_text(sizes: &Sizes) -> String {
    let plain = format!(
        "plain data {} -> {} (plain ratio {:.2})",
        human(sizes.plain),
        human(sizes.archive),
        ratio(sizes.plain, sizes.archive)
    );
    match sizes.input {
        Some(input) => format!(
            "file {} -> {} ({}); {plain}",
            human(input),
            human(sizes.archive),
            change(ratio(input, sizes.archive))
        ),
        None => plain,
    }
}

/// A compression's summary as JSON. `plain_bytes`, `compressed_bytes`, `ratio`,
/// `input_file_bytes` and `file_ratio` keep the names earlier versions printed;
/// `archive_file_bytes` and `plain_ratio` name the same values by what they measure.
pub fn summary_json(output: &str, sizes: &Sizes) -> serde_json::Value {
    let plain_ratio = ratio(sizes.plain, sizes.archive);
    serde_json::json!({
        "output": output,
        "input_file_bytes": sizes.input,
        "archive_file_bytes": sizes.archive,
        "file_ratio": sizes.input.map(|input| ratio(input, sizes.archive)),
        "plain_bytes": sizes.plain,
        "plain_ratio": plain_ratio,
        "compressed_bytes": sizes.archive,
        "ratio": plain_ratio,
    })
}

/// The columns' plain bytes in all.
fn plain_bytes(info: &ArchiveInfo) -> u64 {
    info.columns.iter().map(|c| c.plain_bytes).sum()
}

/// `colzip info`'s sizes: the archive file and its plain data. The archive does not
/// record its input file's size, so there is no file ratio to give.
pub fn info_text(info: &ArchiveInfo) -> String {
    let plain = plain_bytes(info);
    format!(
        "archive file {} ({} bytes); plain data {} (plain ratio {:.2})",
        human(info.archive_bytes),
        info.archive_bytes,
        human(plain),
        ratio(plain, info.archive_bytes)
    )
}

/// `colzip info --format json`: the archive's own fields, with `plain_bytes` and
/// `plain_ratio` over the whole archive added.
pub fn info_json(info: &ArchiveInfo) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(info)?;
    if let Some(fields) = value.as_object_mut() {
        let plain = plain_bytes(info);
        fields.insert("plain_bytes".into(), plain.into());
        fields.insert(
            "plain_ratio".into(),
            ratio(plain, info.archive_bytes).into(),
        );
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(999), "999 B");
        assert_eq!(human(1000), "1.0 kB");
        assert_eq!(human(19_100_000), "19.1 MB");
        assert_eq!(human(41_630_183), "41.6 MB");
        assert_eq!(human(3_000_000_000), "3.0 GB");
    }

    #[test]
    fn summary_names_both_ratios() {
        let sizes = Sizes {
            input: Some(19_100_000),
            plain: 41_630_183,
            archive: 12_984_173,
        };
        assert_eq!(
            summary_text(&sizes),
            "file 19.1 MB -> 13.0 MB (1.47x smaller); plain data 41.6 MB -> 13.0 MB (plain ratio 3.21)"
        );
        let grew = Sizes {
            input: Some(100),
            plain: 100,
            archive: 105,
        };
        assert!(summary_text(&grew).starts_with("file 100 B -> 105 B (1.05x larger)"));
    }
}
