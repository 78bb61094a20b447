//! Corrupt, truncated, random and crafted containers and archives are errors of the
//! right kind, never panics; any `Ok` is the original.

mod crafted;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int32Array, RecordBatch, StringArray};
use colzip::Error;
use colzip::archive::{ArchiveReader, ArchiveWriter, RawType, Source};
use colzip::codec::CodecError;
use colzip::column::{self, CodecChoice, CompressedColumn};

fn sample_columns() -> Vec<ArrayRef> {
    vec![
        Arc::new(Int32Array::from_iter(
            (0..2000).map(|i| (i % 7 != 0).then_some(i / 3)),
        )),
        Arc::new(StringArray::from_iter_values(
            (0..500).map(|i| format!("value {} of {}", i % 17, i % 5)),
        )),
    ]
}

fn decode(bytes: &[u8]) -> colzip::Result<ArrayRef> {
    column::decompress(&CompressedColumn::from_bytes(bytes)?)
}

/// An error a bad container may give: a checksum or format error, or a codec's.
fn is_bad_input(error: &Error) -> bool {
    matches!(
        error,
        Error::Checksum { .. } | Error::Format(_) | Error::Codec(_)
    )
}

#[test]
fn truncated_containers_are_errors() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k", "intpack", "auto"] {
            let bytes = column::compress(array.as_ref(), &codec.parse().unwrap())
                .unwrap()
                .to_bytes()
                .unwrap();
            for len in 0..bytes.len() {
                match decode(&bytes[..len]) {
                    // Too short for the magic and CRC, or the CRC no longer matches.
                    Err(Error::Format(_) | Error::Checksum { .. }) => {}
                    other => panic!("{codec}: truncated to {len}: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn flipped_bits_are_errors() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k", "intpack"] {
            let bytes = column::compress(array.as_ref(), &codec.parse().unwrap())
                .unwrap()
                .to_bytes()
                .unwrap();
            for pos in (0..bytes.len()).step_by(3) {
                let mut bad = bytes.clone();
                bad[pos] ^= 1 << (pos % 8);
                match decode(&bad) {
                    Err(Error::Checksum { .. }) => {}
                    // The magic itself.
                    Err(Error::Format(m)) if pos < 4 && m.contains("magic") => {}
                    other => panic!("{codec}: bit flipped at {pos}: {other:?}"),
                }
            }
        }
    }
}

/// With the container CRC patched to match, damage reaches the parsers and codecs: the
/// part checksums catch what they cannot, so any `Ok` is the original array, unless the
/// damage changed the field itself (a valid container of another type: its array must
/// then at least be valid).
#[test]
fn damage_behind_a_valid_crc_is_an_error_or_the_original() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k", "intpack", "stored"] {
            let compressed = column::compress(array.as_ref(), &codec.parse().unwrap()).unwrap();
            let bytes = compressed.to_bytes().unwrap();
            for pos in 5..bytes.len() - 4 {
                let mut bad = bytes.clone();
                bad[pos] = bad[pos].wrapping_add(1 + (pos % 200) as u8);
                let body = bad.len() - 4;
                let crc = crc32c::crc32c(&bad[..body]);
                bad[body..].copy_from_slice(&crc.to_le_bytes());
                match decode(&bad) {
                    Ok(back) => {
                        let field_changed = CompressedColumn::from_bytes(&bad)
                            .is_ok_and(|c| c.field() != compressed.field());
                        if field_changed {
                            back.to_data().validate_full().unwrap();
                        } else {
                            assert_eq!(&back, &array, "{codec}: change at {pos}");
                        }
                    }
                    Err(e) => assert!(is_bad_input(&e), "{codec}: change at {pos}: {e:?}"),
                }
            }
        }
    }
}

#[test]
fn random_bytes_are_errors() {
    let mut state = 0x1234_5678_9abc_def0u64;
    for len in [0, 1, 4, 5, 16, 100, 1000] {
        for _ in 0..50 {
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            assert!(matches!(decode(&bytes), Err(Error::Format(_))));
            if len >= 4 {
                bytes[..4].copy_from_slice(column::MAGIC);
                assert!(matches!(
                    decode(&bytes),
                    Err(Error::Format(_) | Error::Checksum { .. })
                ));
            }
        }
    }
}

fn int32_archive(batches: usize) -> (Vec<u8>, Vec<RecordBatch>) {
    int32_archive_from(batches, 0)
}

/// An archive of `batches` batches of raw int32 values starting at `from`.
fn int32_archive_from(batches: usize, from: i32) -> (Vec<u8>, Vec<RecordBatch>) {
    let schema = RawType::Int32.schema();
    let batches: Vec<RecordBatch> = (0..batches)
        .map(|b| {
            let values: ArrayRef = Arc::new(Int32Array::from_iter_values(
                (0..2000).map(|i| from + i / 3 + b as i32 * 1000),
            ));
            RecordBatch::try_new(schema.clone(), vec![values]).unwrap()
        })
        .collect();
    let mut writer = ArchiveWriter::new(Vec::new(), schema, Source::Raw(RawType::Int32)).unwrap();
    for batch in &batches {
        writer.write_batch(batch, &CodecChoice::Auto).unwrap();
    }
    (writer.finish(false).unwrap(), batches)
}

/// Every batch of an archive, with its source and trailing-newline flag.
fn read_all(bytes: &[u8]) -> colzip::Result<(Source, Vec<RecordBatch>, bool)> {
    let mut reader = ArchiveReader::new(bytes)?;
    let mut batches = Vec::new();
    while let Some(batch) = reader.next_batch()? {
        batches.push(batch);
    }
    Ok((
        reader.source(),
        batches,
        reader.trailing_newline().unwrap_or(false),
    ))
}

#[test]
fn truncated_archives_are_errors() {
    let (bytes, batches) = int32_archive(1);
    let (source, back, trailing) = read_all(&bytes).unwrap();
    assert_eq!(
        (source, back, trailing),
        (Source::Raw(RawType::Int32), batches, false)
    );
    for len in 0..bytes.len() {
        match read_all(&bytes[..len]) {
            Err(Error::Format(m)) if m.contains("truncated") || m.contains("too short") => {}
            other => panic!("archive truncated to {len}: {other:?}"),
        }
    }
}

/// Where the records of `int32_archive(n)` start: the header ends with its CRC, then
/// each batch is marker, rows, container length, container, CRC.
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut pos = 7;
    let (len, used) = colzip::codec::varint::read_u64(&bytes[pos..], "test").unwrap();
    pos += used + len as usize + 4;
    let mut starts = Vec::new();
    while bytes[pos] == 1 {
        starts.push(pos);
        pos += 1;
        let (_, used) = colzip::codec::varint::read_u64(&bytes[pos..], "test").unwrap();
        pos += used;
        let (len, used) = colzip::codec::varint::read_u64(&bytes[pos..], "test").unwrap();
        pos += used + len as usize + 4;
    }
    starts.push(pos);
    starts
}

/// Issue 13: one flipped bit in the source kind turned raw int32 output into an Arrow IPC
/// file, and the end record's flags were covered by nothing.
#[test]
fn header_and_flags_are_covered_by_the_crc() {
    let (bytes, _) = int32_archive(2);
    // Source kind (byte 5), raw type (byte 6), version-independent header bytes.
    for pos in [5, 6, 8] {
        let mut bad = bytes.clone();
        bad[pos] ^= 1;
        match read_all(&bad) {
            Err(Error::Checksum { what }) => assert!(what.contains("header"), "{what}"),
            Err(Error::Format(m)) => assert!(pos != 8, "{m}"),
            other => panic!("header byte {pos} flipped: {other:?}"),
        }
    }
    // The end record's flags byte.
    let end = *record_starts(&bytes).last().unwrap();
    let mut bad = bytes.clone();
    bad[end + 1] |= 1;
    match read_all(&bad) {
        Err(Error::Checksum { what }) => assert!(what.contains("end record"), "{what}"),
        other => panic!("flags set: {other:?}"),
    }
}

/// Issue 13: batches could be reordered, or an end record taken from another archive.
#[test]
fn batch_order_and_end_record_are_bound() {
    let (bytes, _) = int32_archive(3);
    let starts = record_starts(&bytes);
    let record = |k: usize| bytes[starts[k]..starts[k + 1]].to_vec();
    // Batches 1 and 2 swapped, each with its own CRC.
    let mut swapped = bytes[..starts[0]].to_vec();
    for k in [0, 2, 1] {
        swapped.extend(record(k));
    }
    swapped.extend_from_slice(&bytes[starts[3]..]);
    assert_eq!(swapped.len(), bytes.len());
    match read_all(&swapped) {
        Err(Error::Checksum { what }) => assert!(what.contains("batch 1"), "{what}"),
        other => panic!("batches swapped: {other:?}"),
    }
    // A batch dropped, with the end record of another two-batch archive in its place.
    let (two, _) = int32_archive_from(2, 7);
    let two_end = *record_starts(&two).last().unwrap();
    let mut spliced = bytes[..starts[2]].to_vec();
    spliced.extend_from_slice(&two[two_end..]);
    match read_all(&spliced) {
        Err(Error::Checksum { what }) => assert!(what.contains("end record"), "{what}"),
        other => panic!("foreign end record: {other:?}"),
    }
    // Anything after the end record.
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(read_all(&longer), Err(Error::Format(m)) if m.contains("after")));
}

/// Issue 13: the trailing-newline flag was honoured for every raw type. Even with valid
/// CRCs it is refused outside utf8-lines archives, and a writer cannot set it there.
#[test]
fn flags_apply_only_where_they_mean_something() {
    let field = {
        let mut f = Vec::new();
        colzip::column::write_field(&mut f, RawType::Int32.schema().field(0)).unwrap();
        f
    };
    let values: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 3]));
    let container = column::compress_field(
        RawType::Int32.schema().field(0),
        values.as_ref(),
        &CodecChoice::Auto,
    )
    .unwrap()
    .to_bytes()
    .unwrap();
    let forged = crafted::archive(0, RawType::Int32.tag(), &field, &[(3, container)], 1);
    match read_all(&forged) {
        Err(Error::Format(m)) => assert!(m.contains("flags"), "{m}"),
        other => panic!("newline flag on int32: {other:?}"),
    }
    let writer = ArchiveWriter::new(
        Vec::new(),
        RawType::Int32.schema(),
        Source::Raw(RawType::Int32),
    )
    .unwrap();
    assert!(matches!(writer.finish(true), Err(Error::Format(_))));
    // A raw archive's schema is its raw type's.
    let wrong = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("n", arrow::datatypes::DataType::Int32, true),
    ]));
    assert!(matches!(
        ArchiveWriter::new(Vec::new(), wrong, Source::Raw(RawType::Int32)),
        Err(Error::Format(_))
    ));
}

#[test]
fn version_1_archives_are_refused_by_name() {
    let (mut bytes, _) = int32_archive(1);
    bytes[4] = 1;
    match ArchiveReader::new(bytes.as_slice()) {
        Err(Error::Format(m)) => assert!(m.contains("version 1"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Issue 13: types Arrow cannot represent panicked in Arrow's constructors, though the
/// container's checksums were valid.
#[test]
fn types_arrow_cannot_hold_are_format_errors() {
    let values = vec![0u8; 8];
    let xxh3 = xxhash_rust::xxh3::xxh3_64(&values);
    for (data_type, name) in [
        (&[15u8, 3][..], "Time32 of ns"),
        (&[15, 2], "Time32 of µs"),
        (&[16, 0], "Time64 of s"),
        (&[16, 1], "Time64 of ms"),
        (&[22, 255, 2], "Decimal128 of precision 255"),
        (&[22, 0, 0], "Decimal128 of precision 0"),
        (&[22, 10, 11], "Decimal128 of scale > precision"),
        (&[20, 10, 2], "Decimal32 of precision 10"),
        (&[31, 11, 4], "Dictionary with a Float32 key"),
    ] {
        let bytes = crafted::container(
            "t",
            true,
            data_type,
            2,
            &[crafted::Part {
                role: 2,
                width: 4,
                codec: 0,
                raw_len: 8,
                stream: &values,
                xxh3,
            }],
        );
        match decode(&bytes) {
            Err(Error::Format(_)) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// Issue 13: the container's lengths were trusted as allocation sizes (the SQL function
/// `colzip_decompress(blob, 'Int32')` aborted the process). A one-row Int32 column whose
/// values part claims 64 GiB is refused before anything is decoded.
#[test]
fn container_lengths_are_checked_against_rows_and_streams() {
    let (stream, claim) = crafted::bwt_directory_bomb(1024);
    let int32_claiming = |rows: u64, raw_len: u64, stream: &[u8], codec: u8| {
        crafted::container(
            "v",
            true,
            crafted::INT32,
            rows,
            &[crafted::Part {
                role: 2,
                width: 4,
                codec,
                raw_len,
                stream,
                xxh3: 0,
            }],
        )
    };
    // One row, a 64 GiB values part.
    match CompressedColumn::from_bytes(&int32_claiming(1, claim, &stream, 4)) {
        Err(Error::Format(m)) => assert!(m.contains("row count"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Rows that agree, a stream that claims something else.
    match CompressedColumn::from_bytes(&int32_claiming(1000, 4000, &stream, 4)) {
        Err(Error::Format(m)) => assert!(m.contains("holds"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
    // A stream whose header does not fit its bytes.
    match CompressedColumn::from_bytes(&int32_claiming(1, 4, &[1, 4, 128, 0, 8, 4, 7], 1)) {
        Err(Error::Codec(CodecError::Corrupt { .. })) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// Issue 13: `colzip compress` of an empty file with --type int16/int32/int64/float64
/// panicked ("Memory pointer is not aligned"). Empty arrays of every raw type round-trip
/// through archives.
#[test]
fn empty_inputs_of_every_raw_type_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    for raw in RawType::ALL {
        let input = dir.path().join(format!("{}.bin", raw.name()));
        std::fs::write(&input, b"").unwrap();
        let archive = dir.path().join(format!("{}.czip", raw.name()));
        let back = dir.path().join(format!("{}.out", raw.name()));
        colzip::archive::compress_file(
            &input,
            &archive,
            colzip::archive::InputKind::Raw(raw),
            &CodecChoice::Auto,
            colzip::codec::Placement::CPU,
            false,
            &mut |_| {},
        )
        .unwrap_or_else(|e| panic!("{}: {e}", raw.name()));
        colzip::archive::decompress_file(
            &archive,
            &back,
            None,
            colzip::codec::Placement::CPU,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(std::fs::read(&back).unwrap(), b"", "{}", raw.name());
    }
}

/// Issue 13: the temporary output was always `OUT.partial`, opened following symlinks,
/// and left behind on failures. Now a planted symlink is never written through, a
/// failing or panicking write leaves nothing, and errors name the path.
#[test]
fn outputs_are_written_safely() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"keep me").unwrap();
    let output = dir.path().join("out.bin");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&victim, dir.path().join("out.bin.partial")).unwrap();
    colzip::archive::write_atomically(&output, false, |mut f| {
        std::io::Write::write_all(&mut f, b"new")?;
        Ok(())
    })
    .unwrap();
    assert_eq!(std::fs::read(&output).unwrap(), b"new");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    // Without overwrite, an existing output stays.
    let refused = colzip::archive::write_atomically(&output, false, |_| Ok(()));
    assert!(matches!(refused, Err(Error::File { .. })), "{refused:?}");
    assert_eq!(std::fs::read(&output).unwrap(), b"new");
    // A symlink at the output is replaced, its target untouched.
    #[cfg(unix)]
    {
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        colzip::archive::write_atomically(&link, true, |mut f| {
            std::io::Write::write_all(&mut f, b"x")?;
            Ok(())
        })
        .unwrap();
        assert!(!link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    }
    let listing = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // A descriptor's path (as `/dev/stdout` is) is never replaced, even where it resolves
    // to a regular file.
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let held = std::fs::File::open(&victim).unwrap();
        let path = std::path::PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
        let refused = colzip::archive::write_atomically(&path, true, |_| Ok(())).unwrap_err();
        assert!(refused.to_string().contains("system file"), "{refused}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    }
    let before = listing();
    // An error and a panic inside the write leave no file behind.
    let failed = colzip::archive::write_atomically(&dir.path().join("e.bin"), true, |_| {
        Err::<(), _>(Error::format("stop"))
    });
    assert!(matches!(failed, Err(Error::Format(_))));
    let panicked = std::panic::catch_unwind(|| {
        colzip::archive::write_atomically(
            &dir.path().join("p.bin"),
            true,
            |_| -> colzip::Result<()> { panic!("inside the write") },
        )
    });
    assert!(panicked.is_err());
    assert_eq!(listing(), before);
    // Errors name the path.
    let missing = dir.path().join("no/such/dir/out.bin");
    let error = colzip::archive::write_atomically(&missing, true, |_| Ok(())).unwrap_err();
    assert!(error.to_string().contains("no/such/dir"), "{error}");
}

/// Issue 13: `colzip info` checked container CRCs only; `info_verified` decodes every
/// part, so a container whose CRCs were recomputed over a damaged part fails there.
#[test]
fn info_verified_checks_what_info_does_not() {
    let (bytes, _) = int32_archive(1);
    let starts = record_starts(&bytes);
    // Damage a byte of the container's codec stream, then recompute its CRC and the
    // archive's: only the part's xxh3 can tell.
    let mut bad = bytes.clone();
    let container_end = starts[1] - 4;
    let at = container_end - 10;
    bad[at] ^= 0x40;
    let container_start = {
        let mut pos = starts[0] + 1;
        pos += colzip::codec::varint::read_u64(&bad[pos..], "test")
            .unwrap()
            .1;
        pos + colzip::codec::varint::read_u64(&bad[pos..], "test")
            .unwrap()
            .1
    };
    let crc = crc32c::crc32c(&bad[container_start..container_end - 4]);
    bad[container_end - 4..container_end].copy_from_slice(&crc.to_le_bytes());
    let end_crc = bad.len() - 4;
    crafted::rechain(
        &mut bad,
        &[starts[0] - 4, container_end, end_crc],
        &[container_end - 4],
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.czip");
    std::fs::write(&path, &bad).unwrap();
    let info = colzip::archive::info(&path).unwrap();
    assert!(!info.verified && !info.not_checked.is_empty());
    match colzip::archive::info_verified(&path, u64::MAX) {
        Err(Error::Checksum { .. } | Error::Codec(_)) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
    std::fs::write(&path, &bytes).unwrap();
    let info = colzip::archive::info_verified(&path, u64::MAX).unwrap();
    assert!(info.verified && info.not_checked.is_empty());
    assert_eq!(info.rows, 2000);
}

#[test]
fn codec_refusals_have_their_kinds() {
    let array: ArrayRef = Arc::new(Int32Array::from_iter_values((0..5000).map(|i| i / 7)));
    for codec in [
        "lzss",
        "gmatch",
        "gmatch:framed",
        "bwt:block=64k",
        "intpack",
    ] {
        let column = column::compress(array.as_ref(), &codec.parse().unwrap()).unwrap();
        let part = &column.root().parts[0];
        let id = part.codec;
        assert_ne!(id, colzip::codec::CodecId::Stored, "{codec}: stored");
        assert!(matches!(
            id.decompress(&part.bytes, part.raw_len - 1),
            Err(CodecError::TooLarge { .. } | CodecError::Corrupt { .. })
        ));
        let mut damaged = part.bytes.to_vec();
        let last = damaged.len() - 1;
        damaged[last] ^= 0x55;
        match id.decompress(&damaged, part.raw_len) {
            Err(CodecError::Corrupt { .. } | CodecError::Checksum { .. }) => {}
            // lzss, raw Snappy and intpack carry no checksum: a changed value decodes.
            Ok(out) => assert!(
                matches!(codec, "lzss" | "gmatch" | "intpack") && out.len() == part.raw_len,
                "{codec}: damage decoded"
            ),
            Err(other) => panic!("{codec}: {other:?}"),
        }
    }
    let _ = array.len();
}

#[test]
fn an_output_that_appears_during_the_write_is_kept() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    let err = colzip::archive::write_atomically(&path, false, |mut file| {
        // Another program creates the output while colzip writes its own.
        std::fs::write(&path, b"theirs").unwrap();
        file.write_all(b"ours")?;
        Ok(())
    })
    .unwrap_err();
    assert!(err.to_string().contains("out.bin"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"theirs");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1, "no temporary file is left");
}

/// A full disk met inside the write (here `/dev/full`, which fails every write with
/// ENOSPC, standing in for the output's own file system) is an error naming the output
/// and the cause; no temporary file is left, and the output it would replace keeps its
/// bytes.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_during_the_write_names_the_output_and_leaves_it_alone() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.bin");
    std::fs::write(&path, b"old").unwrap();
    let err = colzip::archive::write_atomically(&path, true, |mut file| {
        file.write_all(b"the first part fits")?;
        let mut full = std::fs::OpenOptions::new().write(true).open("/dev/full")?;
        full.write_all(b"the rest does not")?;
        Ok(())
    })
    .unwrap_err();
    match &err {
        Error::File {
            path: named,
            source,
            ..
        } => {
            assert_eq!(named, &path);
            assert_eq!(source.raw_os_error(), Some(libc::ENOSPC));
        }
        other => panic!("{other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot write {}: No space left on device",
            path.display()
        )),
        "{text}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["out.bin"], "no temporary file is left");
}
