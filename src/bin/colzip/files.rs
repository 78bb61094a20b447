//! `colzip compress`, `decompress` and `info`: files, pipes and archive summaries.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use clap::Args;
use colzip::archive::{self, InputKind, OutputKind, ParquetCodec, RawType, interrupted};
use colzip::codec::{Codec, Placement, SnappyFormat, gmatch};
use colzip::column::CodecChoice;
use colzip::gpu::Backend;
use colzip::reporting::Format;
use colzip::{Error, Result};

use crate::progress::bytes_bar;
use crate::ratios::{self, Sizes};
use crate::{BackendArg, SnappyArg, parse_size};

/// `colzip compress`'s arguments.
#[derive(Args)]
pub struct CompressArgs {
    input: PathBuf,
    /// Output path [default: INPUT.czip, or INPUT.snappy / INPUT.sz with --snappy]
    #[arg(short, long)]
    output: Option<PathBuf>,
    // No short flag: `-c` is `colzip sql`'s command (one meaning per short flag).
    #[arg(long, default_value = "auto", help = crate::codec_help("Codec"))]
    codec: CodecChoice,
    /// How the input is read: csv or json (JSON lines), columns typed by inference over
    /// the whole file; or a raw file's values: bytes, int8..int64, uint8..uint64, float32,
    /// float64, utf8-lines. Default: by the name, .csv / .tsv / .json / .jsonl / .ndjson,
    /// else bytes (with a warning); not for Arrow IPC and Parquet files, whose schema
    /// gives the types
    #[arg(short = 't', long = "type", value_parser = parse_input_type)]
    raw_type: Option<InputType>,
    /// Whether a CSV input's first line names its columns (else they are named
    /// column_1, column_2, ...)
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set, default_value_t = true)]
    csv_header: bool,
    /// The byte between a CSV input's fields: one ASCII character, or \t or tab
    /// [default: ',', or tab for .tsv]
    #[arg(long, value_name = "CHAR", value_parser = parse_delimiter)]
    delimiter: Option<u8>,
    /// Write a bare Snappy stream made by gmatch (raw or framing format) instead of an archive
    #[arg(long, value_enum)]
    snappy: Option<SnappyArg>,
    /// Replace the output if it is an existing regular file (its permissions are kept;
    /// devices, FIFOs, sockets and directories are never replaced), and write compressed
    /// data to a terminal
    #[arg(short, long)]
    force: bool,
    /// Summary format: table, json or csv
    #[arg(long, default_value = "table")]
    format: Format,
    #[command(flatten)]
    backend: BackendArg,
}

/// What `compress --type` names: a raw file's values, or a text format whose columns'
/// types are inferred.
#[derive(Clone, Copy, Debug)]
pub enum InputType {
    Raw(RawType),
    Csv,
    JsonLines,
}

/// `--type` for clap: csv, json (or jsonl, ndjson), or a raw type.
fn parse_input_type(text: &str) -> std::result::Result<InputType, String> {
    match text.to_ascii_lowercase().as_str() {
        "csv" => Ok(InputType::Csv),
        "json" | "jsonl" | "ndjson" => Ok(InputType::JsonLines),
        _ => text
            .parse()
            .map(InputType::Raw)
            .map_err(|e: Error| format!("{e}, or csv or json")),
    }
}

/// `--delimiter` for clap: one ASCII character other than a quote, a line end or NUL;
/// `\t` and `tab` name the tab.
fn parse_delimiter(text: &str) -> std::result::Result<u8, String> {
    let byte = match text {
        "\\t" | "tab" => b'\t',
        _ if text.len() == 1 && text.is_ascii() => text.as_bytes()[0],
        _ => {
            return Err(format!(
                "'{text}' is not one ASCII character (e.g. ',', ';', '|', tab)"
            ));
        }
    };
    if matches!(byte, b'"' | b'\n' | b'\r' | 0) {
        return Err(format!("{:?} cannot separate CSV fields", byte as char));
    }
    Ok(byte)
}

/// `colzip decompress`'s arguments.
#[derive(Args)]
pub struct DecompressArgs {
    input: PathBuf,
    /// Output path [default: INPUT without its .czip / .snappy / .sz extension]
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Output kind for archives: raw, arrow, parquet, csv or json (JSON lines) [default:
    /// the archive's source]
    #[arg(long)]
    to: Option<OutputKind>,
    /// Read a bare Snappy stream (raw or framing format)
    #[arg(long, value_enum)]
    snappy: Option<SnappyArg>,
    /// Replace the output if it is an existing regular file (its permissions are kept;
    /// devices, FIFOs, sockets and directories are never replaced), and write binary
    /// output (Arrow IPC, Parquet, raw typed values) to a terminal
    #[arg(short, long)]
    force: bool,
    /// Fail, before decoding, when the output would exceed this many bytes (suffixes
    /// k, m, g, t: powers of 1024) [default: no limit]
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    max_output: Option<u64>,
    /// Codec of a Parquet output: uncompressed, snappy, gzip[(0..9)], lz4, lz4_raw,
    /// zstd[(1..22)] [default: the source Parquet file's when the archive records it,
    /// else zstd(1)]
    #[arg(long, value_name = "CODEC", value_parser = parse_parquet_codec)]
    parquet_compression: Option<ParquetCodec>,
    #[command(flatten)]
    backend: BackendArg,
}

/// A Parquet codec for clap: [`ParquetCodec`]'s names.
fn parse_parquet_codec(text: &str) -> std::result::Result<ParquetCodec, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

/// `colzip head`'s arguments.
#[derive(Args)]
pub struct HeadArgs {
    input: PathBuf,
    /// Rows to print (at most 1000000: the rows are held and rendered in memory; more
    /// is what `decompress` is for)
    #[arg(short = 'n', long = "rows", default_value_t = 10, value_parser = parse_head_rows)]
    rows: usize,
    /// table, json or csv
    #[arg(long, default_value = "table")]
    format: Format,
    #[command(flatten)]
    backend: BackendArg,
}

/// The most rows `colzip head` prints.
const HEAD_MAX_ROWS: usize = 1_000_000;

/// `head -n`: a row count in 0..=[`HEAD_MAX_ROWS`].
fn parse_head_rows(text: &str) -> std::result::Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if n <= HEAD_MAX_ROWS => Ok(n),
        _ => Err(format!(
            "'{text}' is not a row count in 0..={HEAD_MAX_ROWS} (for more rows: colzip decompress --to arrow or parquet)"
        )),
    }
}

/// `colzip info`'s arguments.
#[derive(Args)]
pub struct InfoArgs {
    input: PathBuf,
    /// table or json
    #[arg(long, default_value = "table")]
    format: Format,
    /// Decode every part and check every checksum the archive holds
    #[arg(long)]
    verify: bool,
    /// With --verify: fail when the archive would decode to more than this many bytes
    #[arg(long, value_name = "BYTES", value_parser = parse_size, requires = "verify")]
    max_output: Option<u64>,
}

/// `colzip compress`.
pub fn compress_command(args: CompressArgs, verbose: bool) -> Result<()> {
    let CompressArgs {
        input,
        output,
        codec,
        raw_type,
        csv_header,
        delimiter,
        snappy,
        force,
        format,
        backend: BackendArg { backend },
    } = args;
    // Resolved first: `--backend gpu` without a GPU fails before any file is touched.
    // `auto` waits for the input's size.
    let chosen = chosen_placement(backend)?;
    let mut pipes = Pipes::default();
    let default_output = |input: &Path| {
        let ext = match snappy {
            None => "czip",
            Some(SnappyArg::Raw) => "snappy",
            Some(SnappyArg::Framed) => "sz",
        };
        Ok(with_extension(input, ext))
    };
    if pipes_to_terminal(output.as_deref(), &input) && !force {
        // As gzip and zstd do: compressed bytes would only garble the terminal.
        return Err(Error::format(
            "refusing to write compressed data to a terminal: redirect standard output, give -o FILE, or use --force",
        ));
    }
    let (input, output) = pipes.paths(&input, output, default_output)?;
    let overwrite = force || pipes.streams();
    check_output(&input, &output, overwrite)?;
    let what = Coding {
        codec,
        input_type: raw_type,
        csv: CsvChoice {
            header: csv_header,
            delimiter,
        },
        snappy,
        named: pipes.shown_input(),
    };
    // The input's size on disk, for the ratio a user compares with other tools. For
    // standard input, `input` is the spool, so this counts the bytes read.
    let input_bytes = std::fs::metadata(&input).map(|m| m.len()).ok();
    let placement = file_placement(chosen, input_bytes, "an input", verbose)?;
    let result = compress(&input, &output, what, placement, overwrite)?;
    if let Some(warning) = &result.2 {
        // After the work, so that a failure's stderr is its one error block.
        eprintln!("colzip: warning: {warning}");
    }
    pipes.finish(&output)?;
    print_summary(
        &pipes.shown(&output),
        Sizes {
            input: input_bytes,
            plain: result.0,
            archive: result.1,
        },
        format,
        pipes.to_stdout(),
    )
}

/// `colzip decompress`.
pub fn decompress_command(args: DecompressArgs, verbose: bool) -> Result<()> {
    let DecompressArgs {
        input,
        output,
        to,
        snappy,
        force,
        max_output,
        parquet_compression,
        backend: BackendArg { backend },
    } = args;
    // Resolved first: `--backend gpu` without a GPU fails before any file is touched.
    // `auto` waits for the input's size.
    let chosen = chosen_placement(backend)?;
    if snappy.is_some() && (to.is_some() || parquet_compression.is_some()) {
        return Err(Error::usage(
            "--to and --parquet-compression apply to archives, not to --snappy streams",
        ));
    }
    let to_terminal = !force && pipes_to_terminal(output.as_deref(), &input);
    let mut pipes = Pipes::default();
    let (input, output) = pipes.paths(&input, output, strip_extension)?;
    // Text (CSV, JSON, lines, a raw file's bytes) is shown, as `gzip -dc` shows it; typed
    // binary values would only garble the terminal.
    if to_terminal
        && snappy.is_none()
        && let Some(what) = binary_output(&input, to)
    {
        return Err(Error::format(format!(
            "refusing to write {what} to a terminal: redirect standard output, give -o FILE, or use --force"
        )));
    }
    let overwrite = force || pipes.streams();
    check_output(&input, &output, overwrite)?;
    // The archive's size is a floor of its plain bytes (the codecs fall back to storing
    // what they cannot shrink), known before anything is decoded.
    let archive_bytes = std::fs::metadata(&input).map(|m| m.len()).ok();
    let placement = file_placement(chosen, archive_bytes, "an archive", verbose)?;
    let options = archive::DecompressOptions {
        to,
        max_output: max_output.unwrap_or(u64::MAX),
        parquet_codec: parquet_compression,
        overwrite,
    };
    let summary = decompress(&input, &output, snappy, placement, &options)?;
    pipes.finish(&output)?;
    if let (Some(codec), Some(origin)) = (summary.parquet_codec, summary.parquet_codec_origin) {
        // On stderr when stdout holds the data.
        let line = format!(
            "{}: Parquet compressed with {codec} ({origin})",
            pipes.shown(&output).display()
        );
        if pipes.to_stdout() {
            eprintln!("{line}");
        } else {
            crate::stdout::line(&line)?;
        }
    }
    Ok(())
}

/// `colzip head`: the first rows of an archive, decoding only the batches they are in.
pub fn head_command(args: HeadArgs) -> Result<()> {
    let HeadArgs {
        input,
        rows,
        format,
        backend: BackendArg { backend },
    } = args;
    // Resolved first: `--backend gpu` without a GPU fails before the archive is read.
    let (schema, batches) = Placement::new(backend)
        .map_err(Error::from)
        .and_then(|placement| archive::head(&input, rows, placement))
        .map_err(|e| name_non_archive(&input, e))?;
    let text = render_batches(&schema, &batches, format)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// Record batches as a table, JSON (one array of objects) or CSV (with a header).
#[cfg(feature = "datafusion")]
fn render_batches(
    schema: &arrow::datatypes::SchemaRef,
    batches: &[arrow::array::RecordBatch],
    format: Format,
) -> Result<String> {
    colzip::datafusion::session::statements::render(schema, batches, format)
}

/// Record batches as a table (JSON and CSV come with the 'datafusion' feature's writers).
#[cfg(not(feature = "datafusion"))]
fn render_batches(
    schema: &arrow::datatypes::SchemaRef,
    batches: &[arrow::array::RecordBatch],
    format: Format,
) -> Result<String> {
    match format {
        Format::Table => Ok(format!(
            "{}\n",
            arrow::util::pretty::pretty_format_batches_with_schema(schema.clone(), batches)?
        )),
        _ => Err(Error::Unsupported(
            "colzip head prints JSON and CSV with the 'datafusion' feature".into(),
        )),
    }
}

/// `colzip info`.
pub fn info_command(args: InfoArgs) -> Result<()> {
    let InfoArgs {
        input,
        format,
        verify,
        max_output,
    } = args;
    let info = if verify {
        archive::info_verified(&input, max_output.unwrap_or(u64::MAX))
    } else {
        archive::info(&input)
    }
    .map_err(|e| name_non_archive(&input, e))?;
    print_info(&input, &info, format)
}

/// A "not a colzip archive" error names the file, and says so when the file is a Snappy
/// stream that `--snappy` would read.
fn name_non_archive(input: &Path, error: Error) -> Error {
    if input.is_dir() {
        return Error::format(format!(
            "{} is a directory, not a colzip archive",
            input.display()
        ));
    }
    match error {
        Error::Format(message) if message.starts_with("not a colzip archive") => {
            let mut head = [0u8; 10];
            let read = std::fs::File::open(input)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok();
            let framed = read && head == *b"\xff\x06\x00\x00sNaPpY";
            let extension = input.extension().and_then(|e| e.to_str());
            let hint = if framed || extension == Some("sz") {
                "; it looks like a Snappy framed stream: add --snappy framed".to_string()
            } else if extension == Some("snappy") {
                "; if it is a raw Snappy stream, add --snappy raw".to_string()
            } else if read && (head.starts_with(b"PAR1") || head.starts_with(b"ARROW1")) {
                let kind = if head.starts_with(b"PAR1") {
                    "a Parquet"
                } else {
                    "an Arrow IPC"
                };
                format!(
                    "; it is {kind} file: `colzip compress {}` makes an archive of it",
                    input.display()
                )
            } else {
                String::new()
            };
            Error::Format(format!("{}: {message}{hint}", input.display()))
        }
        other => other,
    }
}

/// What `colzip compress` makes of its input.
struct Coding {
    codec: CodecChoice,
    input_type: Option<InputType>,
    csv: CsvChoice,
    snappy: Option<SnappyArg>,
    /// The input as the user named it (a spooled `-` has no extension to go by).
    named: Option<PathBuf>,
}

/// `--csv-header` and `--delimiter` as given.
struct CsvChoice {
    header: bool,
    delimiter: Option<u8>,
}

/// The input's kind: `--type`, else Arrow IPC or Parquet by their magic bytes, else CSV
/// or JSON lines by the name, else bytes, with a warning naming the choices (returned).
fn input_kind(input: &Path, what: &Coding) -> Result<(InputKind, Option<String>)> {
    let named = what.named.as_deref().unwrap_or(input);
    let raw = match what.input_type {
        Some(InputType::Raw(raw)) => raw,
        _ => RawType::Bytes,
    };
    let detected = InputKind::detect(input, raw)?;
    if let (Some(_), Some(kind_name)) = (what.input_type, detected.schema_file()) {
        return Err(Error::usage(format!(
            "--type applies to raw, CSV and JSON files; {} is {kind_name} file, whose schema gives the types",
            named.display(),
        )));
    }
    let csv = colzip::archive::CsvOptions {
        header: what.csv.header,
        delimiter: what.csv.delimiter.unwrap_or(b','),
    };
    let mut warning = None;
    let kind = match what.input_type {
        _ if detected.schema_file().is_some() => detected,
        Some(InputType::Raw(_)) => detected,
        #[cfg(feature = "csv-json")]
        Some(InputType::Csv) => InputKind::Csv(csv),
        #[cfg(feature = "csv-json")]
        Some(InputType::JsonLines) => InputKind::JsonLines,
        #[cfg(not(feature = "csv-json"))]
        Some(InputType::Csv | InputType::JsonLines) => {
            return Err(Error::Unsupported(
                "CSV and JSON inputs need colzip built with the 'csv-json' feature".into(),
            ));
        }
        #[cfg(feature = "csv-json")]
        None => match InputKind::from_extension(named, csv) {
            Some(kind) => kind,
            None => {
                warning = Some(bytes_warning(named));
                detected
            }
        },
        #[cfg(not(feature = "csv-json"))]
        None => {
            warning = Some(bytes_warning(named));
            detected
        }
    };
    #[cfg(feature = "csv-json")]
    let is_csv = matches!(kind, InputKind::Csv(_));
    #[cfg(not(feature = "csv-json"))]
    let is_csv = false;
    if !is_csv && (what.csv.delimiter.is_some() || !what.csv.header) {
        return Err(Error::usage(format!(
            "--csv-header and --delimiter apply to CSV inputs; {} is not read as CSV (--type csv reads it so)",
            named.display()
        )));
    }
    #[cfg(not(feature = "csv-json"))]
    let _ = csv;
    Ok((kind, warning))
}

/// That a file of no known kind is compressed as bytes, and how to choose.
fn bytes_warning(named: &Path) -> String {
    let texts = if cfg!(feature = "csv-json") {
        "csv, json, "
    } else {
        ""
    };
    let raws: Vec<&str> = RawType::ALL.iter().map(|t| t.name()).collect();
    format!(
        "{} is not Arrow IPC or Parquet and its name does not say CSV or JSON; \
         compressed its bytes as one UInt8 column. Choose with --type: {texts}{}",
        named.display(),
        raws.join(", ")
    )
}

/// Bytes from which `--backend auto` runs one file's codecs on the GPU. A process pays
/// for the GPU before its first batch: opening the device, pinning staging and loading
/// the kernels took 0.3-0.5 s on an H200 host, more than the CPU's cores take for a
/// smaller file (PERFORMANCE.md, "The CLI on the GPU").
pub const FILE_GPU_MIN_BYTES: u64 = 1 << 30;

/// `--backend` resolved before any file is touched: `cpu` and `gpu` at once (`gpu`
/// without a usable GPU is an error here), `auto` left for [`file_placement`], which
/// knows the input's size.
fn chosen_placement(backend: Backend) -> Result<Option<Placement>> {
    Ok(match backend {
        Backend::Auto => None,
        other => Some(Placement::new(other)?),
    })
}

/// Where one file's codecs run: as `--backend` chose, or under `auto` the CPU for a file
/// of fewer than [`FILE_GPU_MIN_BYTES`] (said on stderr with `--verbose`), else the GPU
/// when there is one.
fn file_placement(
    chosen: Option<Placement>,
    bytes: Option<u64>,
    what: &str,
    verbose: bool,
) -> Result<Placement> {
    if let Some(placement) = chosen {
        return Ok(placement);
    }
    match bytes {
        Some(bytes) if bytes < FILE_GPU_MIN_BYTES => {
            if verbose {
                eprintln!(
                    "colzip: {what} of {} is below the {} from which the GPU's start-up pays \
                     for itself: the codecs run on the CPU (--backend gpu uses the GPU)",
                    ratios::human(bytes),
                    ratios::human(FILE_GPU_MIN_BYTES)
                );
            }
            Ok(Placement::CPU)
        }
        _ => {
            let placement = Placement::new(Backend::Auto)?;
            if verbose {
                match placement.gpu() {
                    Some(gpu) => eprintln!(
                        "colzip: the codecs run on GPU {} ({})",
                        gpu.info().ordinal,
                        gpu.info().name
                    ),
                    None => eprintln!("colzip: no usable GPU: the codecs run on the CPU"),
                }
            }
            Ok(placement)
        }
    }
}

/// `colzip compress` from `input` to `output` (files); the plain and compressed sizes, and
/// a warning about how the input was read.
fn compress(
    input: &Path,
    output: &Path,
    what: Coding,
    placement: Placement,
    overwrite: bool,
) -> Result<(u64, u64, Option<String>)> {
    if let Some(snappy) = what.snappy {
        let data = std::fs::read(input).map_err(Error::file("read", &input))?;
        let codec = Codec::Gmatch(match snappy {
            SnappyArg::Raw => SnappyFormat::Raw,
            SnappyArg::Framed => SnappyFormat::Framed,
        });
        let stream = codec.compress_one(&placement, &data)?;
        archive::write_atomically(output, overwrite, |mut file| Ok(file.write_all(&stream)?))?;
        return Ok((data.len() as u64, stream.len() as u64, None));
    }
    let (kind, warning) = input_kind(input, &what)?;
    let size = std::fs::metadata(input)
        .map_err(Error::file("read the metadata of", &input))?
        .len();
    let bar = bytes_bar(size, "compress");
    let summary = archive::compress_file(
        input,
        output,
        kind,
        &what.codec,
        placement,
        overwrite,
        &mut |done| bar.set_position(done),
    )?;
    bar.finish_and_clear();
    Ok((summary.plain_bytes, summary.archive_bytes, warning))
}

/// `colzip decompress` from `input` to `output` (files).
fn decompress(
    input: &Path,
    output: &Path,
    snappy: Option<SnappyArg>,
    placement: Placement,
    options: &archive::DecompressOptions,
) -> Result<archive::Summary> {
    let max_output = options.max_output;
    if let Some(snappy) = snappy {
        // On the CPU: a framed stream states no total length for a GPU decoder to
        // size its output by.
        let stream = std::fs::read(input).map_err(Error::file("read", &input))?;
        let limit = usize::try_from(max_output).unwrap_or(usize::MAX);
        archive::write_atomically(output, options.overwrite, |file| {
            let mut out = std::io::BufWriter::new(file);
            match snappy {
                // At most 2^32 - 1 bytes, and what the elements can produce.
                SnappyArg::Raw => {
                    out.write_all(&gmatch::decompress_raw_with_limit(&stream, limit)?)?
                }
                // Chunk by chunk: memory stays that of a few MiB of output.
                SnappyArg::Framed => {
                    gmatch::decompress_framed_to(&stream, limit, |bytes| {
                        out.write_all(bytes).map_err(Error::from)
                    })?;
                }
            }
            Ok(out.flush()?)
        })?;
        return Ok(archive::Summary::default());
    }
    let bar = bytes_bar(0, "decompress");
    let summary = archive::decompress_file_with(input, output, placement, options, &mut |done| {
        bar.set_position(done)
    })
    .map_err(|e| name_non_archive(input, e))?;
    bar.finish_and_clear();
    Ok(summary)
}

fn print_info(input: &Path, info: &archive::ArchiveInfo, format: Format) -> Result<()> {
    match format {
        Format::Json => crate::stdout::line(format_args!(
            "{}",
            ratios::info_json(info)
                .and_then(|value| serde_json::to_string_pretty(&value))
                .map_err(|e| Error::format(e.to_string()))?
        ))?,
        Format::Csv => return Err(Error::usage("info prints table or json")),
        Format::Table => {
            crate::stdout::line(format_args!(
                "{}: {} archive, {} rows in {} batches; {}",
                input.display(),
                info.source,
                info.rows,
                info.batches,
                ratios::info_text(info)
            ))?;
            crate::stdout::line(format_args!(
                "{:<24} {:<28} {:>12} {:>12} {:>14} {:>14} {:>8}  codecs",
                "column", "type", "rows", "nulls", "plain", "compressed", "ratio"
            ))?;
            for c in &info.columns {
                let codecs: Vec<String> = c
                    .codecs
                    .iter()
                    .map(|(k, v)| format!("{k} ({v} B)"))
                    .collect();
                crate::stdout::line(format_args!(
                    "{:<24} {:<28} {:>12} {:>12} {:>14} {:>14} {:>8.3}  {}",
                    c.name,
                    c.arrow_type,
                    c.rows,
                    c.null_count,
                    c.plain_bytes,
                    c.compressed_bytes,
                    c.ratio,
                    codecs.join(", ")
                ))?;
            }
            for check in &info.checked {
                crate::stdout::line(format_args!("checked: {check}"))?;
            }
            for check in &info.not_checked {
                crate::stdout::line(format_args!("not checked (use --verify): {check}"))?;
            }
        }
    }
    Ok(())
}

/// `-` as an input or output: standard input is spooled to a temporary file (the archive
/// layer maps and detects files), and an output for standard output is written to a
/// temporary file and then copied there. Memory stays bounded; the disk holds one copy.
/// An output path that is a FIFO or a character device (`/dev/stdout`, `/dev/null`) is
/// a stream too: written the same way, never replaced by a file.
///
/// The spools live in a private directory (0700, files 0600): piped data is readable by
/// its owner alone, whatever the umask.
#[derive(Default)]
struct Pipes {
    dir: Option<tempfile::TempDir>,
    /// The spool directory and its files, removed by the signal handler on Ctrl-C too.
    registered: Vec<interrupted::Registered>,
    /// Where the output is copied when it is a stream: standard output or a special file.
    stream: Option<Stream>,
    /// Whether the input is standard input (spooled to a file without its name).
    from_stdin: bool,
}

enum Stream {
    Stdout,
    Special(PathBuf),
}

/// Whether the output is a terminal: standard output (`-o -`, or a `-` input without
/// `-o`) when it is one, or a terminal named as the output file. Asked before standard
/// input is spooled, so a refusal reads nothing.
fn pipes_to_terminal(output: Option<&Path>, input: &Path) -> bool {
    use std::io::IsTerminal;
    use std::os::unix::fs::FileTypeExt;
    let dash = Path::new("-");
    match output {
        Some(output) if output == dash => std::io::stdout().is_terminal(),
        // `-o /dev/stdout`, `-o /dev/tty`: a character device (opening one for writing
        // does not wait, as a FIFO's would) that is a terminal.
        Some(output) => {
            output
                .metadata()
                .is_ok_and(|m| m.file_type().is_char_device())
                && std::fs::OpenOptions::new()
                    .write(true)
                    .open(output)
                    .is_ok_and(|f| f.is_terminal())
        }
        None => input == dash && std::io::stdout().is_terminal(),
    }
}

/// What the archive at `input` decompresses to (as `to`, or what it was made from) when
/// that is binary: Arrow IPC, Parquet, or raw values of a fixed width. `None` for text and
/// for raw bytes, and for a file that is no archive (decompressing it says so).
fn binary_output(input: &Path, to: Option<OutputKind>) -> Option<String> {
    let reader = std::fs::File::open(input)
        .ok()
        .and_then(|file| archive::ArchiveReader::new(std::io::BufReader::new(file)).ok())?;
    let source = reader.source();
    match to.unwrap_or_else(|| OutputKind::for_source(source)) {
        OutputKind::ArrowIpc => Some("an Arrow IPC file".into()),
        #[cfg(feature = "parquet")]
        OutputKind::Parquet => Some("a Parquet file".into()),
        OutputKind::Raw => match source {
            archive::Source::Raw(RawType::Bytes | RawType::Utf8Lines) => None,
            archive::Source::Raw(raw) => Some(format!("raw {} values", raw.name())),
            // A non-raw archive refuses `--to raw` itself.
            _ => None,
        },
        #[cfg(feature = "csv-json")]
        OutputKind::Csv | OutputKind::JsonLines => None,
    }
}

/// Whether `path` (symlinks followed) is a FIFO or a character device, or names an open
/// descriptor: written in place, never replaced.
fn is_stream_file(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    path.metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_char_device())
        || names_a_descriptor(path)
}

/// Whether `path` is an existing `/dev/stdout`, `/dev/fd/N`, `/proc/self/fd/N` or a link
/// to one of these. Redirected to a file, `/dev/stdout` resolves to that regular file, and
/// replacing "the link" as a file output would replace `/dev/stdout` itself.
fn names_a_descriptor(path: &Path) -> bool {
    let in_descriptor_dir = path
        .parent()
        .and_then(|dir| dir.canonicalize().ok())
        .is_some_and(|dir| dir == Path::new("/dev") || dir.starts_with("/proc"));
    let links_to_proc = std::fs::read_link(path).is_ok_and(|target| target.starts_with("/proc"));
    (in_descriptor_dir || links_to_proc) && path.exists()
}

/// Whether `path` names a descriptor open on the same file as standard output
/// (`-o /dev/stdout > file`): written through standard output, which keeps its offset and
/// append mode, as a reopened path would not.
fn is_standard_output(path: &Path) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    if !names_a_descriptor(path) {
        return false;
    }
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| std::fs::File::from(fd).metadata());
    match (path.metadata(), stdout) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// The start of a spool directory's name: `colzip-pipe.PID.XXXXXX` in the temporary
/// directory.
const SPOOL_PREFIX: &str = "colzip-pipe.";

impl Pipes {
    fn dir(&mut self) -> Result<&Path> {
        if self.dir.is_none() {
            // Named for this process, so that a later run removes the spools of one that
            // was killed (SIGKILL runs no handler).
            let parent = std::env::temp_dir();
            colzip::archive::remove_stale_dirs(&parent, SPOOL_PREFIX);
            let dir = tempfile::Builder::new()
                .prefix(&format!("{SPOOL_PREFIX}{}.", std::process::id()))
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .map_err(Error::file(
                    "create a temporary directory in",
                    &std::env::temp_dir(),
                ))?;
            let path = dir.path();
            self.registered
                .push(interrupted::register(path, interrupted::Kind::Dir));
            for spool in ["stdin", "stdout"] {
                self.registered.push(interrupted::register(
                    &path.join(spool),
                    interrupted::Kind::File,
                ));
            }
            self.dir = Some(dir);
        }
        Ok(self
            .dir
            .as_ref()
            .map(|d| d.path())
            .unwrap_or(Path::new(".")))
    }

    /// The files to read and write: `-` (and, after a `-` input, no `-o`) stand for the
    /// standard streams; `default_output` names the output of a file input.
    fn paths(
        &mut self,
        input: &Path,
        output: Option<PathBuf>,
        default_output: impl Fn(&Path) -> Result<PathBuf>,
    ) -> Result<(PathBuf, PathBuf)> {
        let dash = Path::new("-");
        let from_stdin = input == dash;
        self.from_stdin = from_stdin;
        let input = if from_stdin {
            let path = self.dir()?.join("stdin");
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(Error::file("create", &path))?;
            std::io::copy(&mut std::io::stdin().lock(), &mut file)
                .map_err(Error::file("spool standard input to", &path))?;
            path
        } else {
            input.to_path_buf()
        };
        self.stream = match &output {
            Some(output) if output == dash || is_standard_output(output) => Some(Stream::Stdout),
            Some(output) if is_stream_file(output) => Some(Stream::Special(output.clone())),
            Some(_) => None,
            None => from_stdin.then_some(Stream::Stdout),
        };
        let output = match output {
            _ if self.stream.is_some() => self.dir()?.join("stdout"),
            Some(output) => output,
            None => default_output(&input)?,
        };
        Ok((input, output))
    }

    /// Whether the output is a stream (standard output or a special file).
    fn streams(&self) -> bool {
        self.stream.is_some()
    }

    /// Whether the data goes to standard output (summaries then go to standard error).
    fn to_stdout(&self) -> bool {
        matches!(self.stream, Some(Stream::Stdout))
    }

    /// The input's name in messages when it is not the file read (`-` for standard input).
    fn shown_input(&self) -> Option<PathBuf> {
        self.from_stdin.then(|| PathBuf::from("-"))
    }

    /// The output's name in messages.
    fn shown(&self, output: &Path) -> PathBuf {
        match &self.stream {
            Some(Stream::Stdout) => PathBuf::from("-"),
            Some(Stream::Special(path)) => path.clone(),
            None => output.to_path_buf(),
        }
    }

    /// Copies a stream's result to it.
    fn finish(&self, output: &Path) -> Result<()> {
        let Some(stream) = &self.stream else {
            return Ok(());
        };
        let mut file = std::fs::File::open(output).map_err(Error::file("read", output))?;
        match stream {
            Stream::Stdout => {
                // Named in the error as a file output is: a full disk behind a
                // redirection is otherwise a bare "I/O error".
                let written = "standard output";
                let mut stdout = std::io::stdout().lock();
                std::io::copy(&mut file, &mut stdout).map_err(Error::file("write", written))?;
                stdout.flush().map_err(Error::file("write", written))?;
            }
            Stream::Special(path) => {
                let mut target = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(Error::file("open", path))?;
                std::io::copy(&mut file, &mut target).map_err(Error::file("write", path))?;
            }
        }
        Ok(())
    }
}

fn with_extension(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

fn strip_extension(path: &Path) -> Result<PathBuf> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("czip" | "snappy" | "sz") => Ok(path.with_extension("")),
        _ => Err(Error::usage(format!(
            "cannot derive an output name from {} (no .czip/.snappy/.sz extension): give one with -o",
            path.display()
        ))),
    }
}

fn check_output(input: &Path, output: &Path, force: bool) -> Result<()> {
    if !input.is_file() {
        return Err(Error::format(format!(
            "{} is not a readable file",
            input.display()
        )));
    }
    // `symlink_metadata`: a symlink at the output counts as existing, even a dangling one.
    if output.symlink_metadata().is_ok() && !force {
        return Err(Error::format(format!(
            "{} exists (use --force to overwrite)",
            output.display()
        )));
    }
    Ok(())
}

/// The summary of a compression, on stdout, or on stderr when stdout holds the data: the
/// file ratio and the plain ratio, each named ([`ratios`]).
fn print_summary(output: &Path, sizes: Sizes, format: Format, on_stderr: bool) -> Result<()> {
    let shown = output.display().to_string();
    let line = match format {
        Format::Json => ratios::summary_json(&shown, &sizes).to_string(),
        _ => format!("{shown}: {}", ratios::summary_text(&sizes)),
    };
    if on_stderr {
        eprintln!("{line}");
    } else {
        crate::stdout::line(&line)?;
    }
    Ok(())
}
