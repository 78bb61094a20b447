//! Corrupt, truncated and random containers and archives are errors, never panics.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, StringArray};
use colzip::archive::{ArchiveReader, ArchiveWriter, RawType, Source};
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

#[test]
fn truncated_containers_are_errors() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k", "auto"] {
            let bytes = column::compress(array.as_ref(), &codec.parse().unwrap())
                .unwrap()
                .to_bytes()
                .unwrap();
            for len in 0..bytes.len() {
                assert!(
                    decode(&bytes[..len]).is_err(),
                    "{codec}: truncated to {len}"
                );
            }
        }
    }
}

#[test]
fn flipped_bits_are_errors() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k"] {
            let bytes = column::compress(array.as_ref(), &codec.parse().unwrap())
                .unwrap()
                .to_bytes()
                .unwrap();
            for pos in (0..bytes.len()).step_by(3) {
                let mut bad = bytes.clone();
                bad[pos] ^= 1 << (pos % 8);
                assert!(decode(&bad).is_err(), "{codec}: bit flipped at {pos}");
            }
        }
    }
}

/// With the container CRC patched to match, damage reaches the parsers and codecs.
#[test]
fn damage_behind_a_valid_crc_is_still_an_error_or_a_checked_result() {
    for array in sample_columns() {
        for codec in ["lzss", "gmatch", "bwt:block=64k", "stored"] {
            let bytes = column::compress(array.as_ref(), &codec.parse().unwrap())
                .unwrap()
                .to_bytes()
                .unwrap();
            for pos in 5..bytes.len() - 4 {
                let mut bad = bytes.clone();
                bad[pos] = bad[pos].wrapping_add(1 + (pos % 200) as u8);
                let body = bad.len() - 4;
                let crc = crc32c::crc32c(&bad[..body]);
                bad[body..].copy_from_slice(&crc.to_le_bytes());
                // The part checksums catch what the codecs cannot: any Ok must be the original.
                if let Ok(back) = decode(&bad) {
                    assert_eq!(back.len(), array.len(), "{codec}: change at {pos}");
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
            assert!(decode(&bytes).is_err());
            if len >= 4 {
                bytes[..4].copy_from_slice(column::MAGIC);
                assert!(decode(&bytes).is_err());
            }
        }
    }
}

#[test]
fn truncated_archives_are_errors() {
    let arrays = sample_columns();
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("n", arrow::datatypes::DataType::Int32, true),
    ]));
    let batch =
        arrow::array::RecordBatch::try_new(schema.clone(), vec![arrays[0].clone()]).unwrap();
    let mut writer = ArchiveWriter::new(Vec::new(), schema, Source::Raw(RawType::Int32)).unwrap();
    writer.write_batch(&batch, &CodecChoice::Auto).unwrap();
    let bytes = writer.finish(false).unwrap();
    let read_all = |bytes: &[u8]| -> colzip::Result<usize> {
        let mut reader = ArchiveReader::new(bytes)?;
        let mut rows = 0;
        while let Some(batch) = reader.next_batch()? {
            rows += batch.num_rows();
        }
        Ok(rows)
    };
    assert_eq!(read_all(&bytes).unwrap(), 2000);
    for len in 0..bytes.len() {
        assert!(
            read_all(&bytes[..len]).is_err(),
            "archive truncated to {len}"
        );
    }
}
