//! Nested Arrow types (List, LargeList, FixedSizeList, Struct, Map, ListView,
//! LargeListView) round-trip through the column layer to equal arrays, with nulls and
//! slices at every nesting level; corrupt nested containers are errors, never panics.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Float64Array,
    GenericListArray, GenericListViewArray, Int32Array, Int64Array, MapArray, OffsetSizeTrait,
    StringArray, StringViewArray, StructArray, new_null_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Int16Type};
use colzip::column::{self, CodecChoice, CompressedColumn, PartRole};

/// Seeded xorshift: every run generates the same arrays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Random validity for `len` rows (none when `nullable` is false, or at random).
fn validity(rng: &mut Rng, len: usize, nullable: bool) -> Option<NullBuffer> {
    (nullable && !rng.chance(15))
        .then(|| NullBuffer::from((0..len).map(|_| !rng.chance(25)).collect::<Vec<_>>()))
}

fn field(name: &str, data_type: DataType, nullable: bool) -> FieldRef {
    Arc::new(
        Field::new(name, data_type, nullable).with_metadata(HashMap::from([(
            "about".to_string(),
            format!("{name} child"),
        )])),
    )
}

fn list_field(data_type: DataType) -> FieldRef {
    field("item", data_type, true)
}

fn map_entries(value: DataType) -> FieldRef {
    field(
        "entries",
        DataType::Struct(Fields::from(vec![
            field("key", DataType::Utf8, false),
            field("value", value, true),
        ])),
        false,
    )
}

/// A random array of `data_type` with `len` rows: generated longer and sliced, so every
/// level (children included) has offsets not starting at 0.
fn random_array(data_type: &DataType, len: usize, nullable: bool, rng: &mut Rng) -> ArrayRef {
    let pad = rng.below(4);
    let full = random_unsliced(data_type, len + pad + rng.below(3), nullable, rng);
    full.slice(pad, len)
}

fn offsets<O: OffsetSizeTrait>(rng: &mut Rng, len: usize) -> OffsetBuffer<O> {
    OffsetBuffer::from_lengths((0..len).map(|_| rng.below(4)))
}

fn random_unsliced(data_type: &DataType, len: usize, nullable: bool, rng: &mut Rng) -> ArrayRef {
    let nulls = validity(rng, len, nullable);
    let valid = |i: usize, nulls: &Option<NullBuffer>| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    match data_type {
        DataType::Int32 => Arc::new(Int32Array::new(
            (0..len).map(|_| rng.below(50) as i32 - 10).collect(),
            nulls,
        )),
        DataType::Int64 => Arc::new(Int64Array::new(
            (0..len)
                .map(|_| rng.next() as i64 >> rng.below(64))
                .collect(),
            nulls,
        )),
        DataType::Float64 => Arc::new(Float64Array::new(
            (0..len).map(|_| rng.below(1000) as f64 / 8.0).collect(),
            nulls,
        )),
        DataType::Boolean => Arc::new(BooleanArray::new(
            (0..len).map(|_| rng.chance(50)).collect(),
            nulls,
        )),
        DataType::Utf8 | DataType::Utf8View => {
            let words = ["", "a", "bb", "ccc", "dddd ü", "eeeee"];
            let values: Vec<Option<&str>> = (0..len)
                .map(|i| valid(i, &nulls).then(|| words[rng.below(words.len())]))
                .collect();
            if *data_type == DataType::Utf8 {
                Arc::new(StringArray::from(values))
            } else {
                Arc::new(StringViewArray::from(values))
            }
        }
        DataType::Dictionary(_, _) => {
            let dictionary: DictionaryArray<Int16Type> = (0..len)
                .map(|i| valid(i, &nulls).then(|| ["x", "y", "z"][rng.below(3)]))
                .collect();
            Arc::new(dictionary)
        }
        DataType::List(item) => Arc::new(random_list::<i32>(item, len, nulls, rng)),
        DataType::LargeList(item) => Arc::new(random_list::<i64>(item, len, nulls, rng)),
        DataType::ListView(item) => Arc::new(random_list_view::<i32>(item, len, nulls, rng)),
        DataType::LargeListView(item) => Arc::new(random_list_view::<i64>(item, len, nulls, rng)),
        DataType::FixedSizeList(item, size) => {
            let values = random_array(
                item.data_type(),
                len * *size as usize,
                item.is_nullable(),
                rng,
            );
            Arc::new(
                FixedSizeListArray::try_new_with_length(item.clone(), *size, values, nulls, len)
                    .unwrap(),
            )
        }
        DataType::Struct(fields) => {
            let columns = fields
                .iter()
                .map(|f| random_array(f.data_type(), len, f.is_nullable(), rng))
                .collect();
            Arc::new(StructArray::try_new_with_length(fields.clone(), columns, nulls, len).unwrap())
        }
        DataType::Map(entries, sorted) => {
            let offsets = offsets::<i32>(rng, len);
            let count = *offsets.last().unwrap() as usize;
            let DataType::Struct(fields) = entries.data_type() else {
                unreachable!("map entries are a struct")
            };
            let keys = random_array(&DataType::Utf8, count, false, rng);
            let values = random_array(fields[1].data_type(), count, true, rng);
            let entries_array =
                StructArray::try_new(fields.clone(), vec![keys, values], None).unwrap();
            Arc::new(
                MapArray::try_new(entries.clone(), offsets, entries_array, nulls, *sorted).unwrap(),
            )
        }
        other => panic!("no generator for {other}"),
    }
}

fn random_list<O: OffsetSizeTrait>(
    item: &FieldRef,
    len: usize,
    nulls: Option<NullBuffer>,
    rng: &mut Rng,
) -> GenericListArray<O> {
    let offsets = offsets::<O>(rng, len);
    let count = offsets.last().unwrap().as_usize();
    let values = random_array(item.data_type(), count, item.is_nullable(), rng);
    GenericListArray::try_new(item.clone(), offsets, values, nulls).unwrap()
}

/// Views in any order, overlapping, some empty.
fn random_list_view<O: OffsetSizeTrait>(
    item: &FieldRef,
    len: usize,
    nulls: Option<NullBuffer>,
    rng: &mut Rng,
) -> GenericListViewArray<O> {
    let count = rng.below(2 * len + 2);
    let values = random_array(item.data_type(), count, item.is_nullable(), rng);
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    for _ in 0..len {
        let offset = rng.below(count + 1);
        offsets.push(O::usize_as(offset));
        sizes.push(O::usize_as(rng.below(count - offset + 1).min(3)));
    }
    GenericListViewArray::try_new(
        item.clone(),
        ScalarBuffer::from(offsets),
        ScalarBuffer::from(sizes),
        values,
        nulls,
    )
    .unwrap()
}

/// The types the issue names, and a few more shapes.
fn nested_types() -> Vec<DataType> {
    let point = Fields::from(vec![
        field("a", DataType::Int32, true),
        field("b", DataType::List(list_field(DataType::Utf8)), true),
    ]);
    vec![
        DataType::List(list_field(DataType::Struct(point.clone()))),
        DataType::Map(
            map_entries(DataType::List(list_field(DataType::Int64))),
            false,
        ),
        DataType::Map(map_entries(DataType::Int32), true),
        DataType::FixedSizeList(list_field(DataType::Float64), 3),
        DataType::FixedSizeList(field("item", DataType::Int32, false), 2),
        DataType::Struct(Fields::from(vec![
            field(
                "tag",
                DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8)),
                true,
            ),
            field("flag", DataType::Boolean, false),
            field("point", DataType::Struct(point), true),
        ])),
        DataType::LargeList(list_field(DataType::Utf8View)),
        DataType::ListView(list_field(DataType::Int32)),
        DataType::LargeListView(list_field(DataType::List(list_field(DataType::Utf8)))),
        DataType::List(list_field(DataType::FixedSizeList(
            list_field(DataType::LargeList(list_field(DataType::Int64))),
            2,
        ))),
    ]
}

fn assert_round_trip(name: &str, array: &dyn Array, codec: &CodecChoice) -> CompressedColumn {
    let field = Field::new("col", array.data_type().clone(), true)
        .with_metadata(HashMap::from([("origin".to_string(), "test".to_string())]));
    let compressed = column::compress_field(&field, array, codec).unwrap();
    let bytes = compressed.to_bytes().unwrap();
    let parsed = CompressedColumn::from_bytes(&bytes).unwrap();
    assert_eq!(parsed, compressed, "{name} / {codec}: container");
    assert_eq!(parsed.field(), &field, "{name}: field");
    let back = column::decompress(&parsed).unwrap();
    assert_eq!(back.data_type(), array.data_type(), "{name} / {codec}");
    assert_eq!(back.as_ref(), array, "{name} / {codec}");
    assert_eq!(back.null_count(), array.null_count(), "{name} / {codec}");
    parsed
}

fn codecs() -> Vec<CodecChoice> {
    [
        "auto",
        "lzss",
        "gmatch",
        "bwt:block=64k",
        "intpack",
        "stored",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

#[test]
fn nested_types_round_trip_with_every_codec() {
    let mut rng = Rng(0x5eed_0019);
    for data_type in nested_types() {
        let array = random_array(&data_type, 700, true, &mut rng);
        for codec in codecs() {
            assert_round_trip(&format!("{data_type}"), array.as_ref(), &codec);
        }
    }
}

#[test]
fn random_nested_arrays_and_their_slices_round_trip() {
    for seed in 1..40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        for data_type in nested_types() {
            let len = rng.below(60);
            let array = random_array(&data_type, len, true, &mut rng);
            let name = format!("seed {seed}: {data_type}");
            assert_round_trip(&name, array.as_ref(), &CodecChoice::Auto);
            let (offset, sub) = (rng.below(len + 1), rng.below(len + 1));
            let sub = sub.min(len - offset);
            let sliced = array.slice(offset, sub);
            assert_round_trip(
                &format!("{name}[{offset}..+{sub}]"),
                &sliced,
                &CodecChoice::Auto,
            );
        }
    }
}

#[test]
fn empty_and_all_null_nested_arrays_round_trip() {
    for data_type in nested_types() {
        let empty = new_null_array(&data_type, 0);
        assert_round_trip(
            &format!("empty {data_type}"),
            &empty,
            &"lzss".parse().unwrap(),
        );
        // Non-nullable children of a nested type cannot be all null; a null parent may
        // still hide them, which `new_null_array` builds.
        let all_null = new_null_array(&data_type, 50);
        assert_round_trip(
            &format!("all-null {data_type}"),
            &all_null,
            &CodecChoice::Auto,
        );
    }
}

#[test]
fn offsets_and_validity_are_parts_of_their_own() {
    let mut rng = Rng(7);
    let data_type = DataType::List(list_field(DataType::Int64));
    let array = random_unsliced(&data_type, 500, true, &mut rng);
    assert!(array.null_count() > 0);
    let compressed = assert_round_trip("list", array.as_ref(), &CodecChoice::Auto);
    let roles: Vec<PartRole> = compressed.root().parts.iter().map(|p| p.role).collect();
    assert_eq!(roles, [PartRole::Validity, PartRole::Lengths]);
    let child = &compressed.root().children[0];
    assert_eq!(
        child.rows,
        array
            .as_any()
            .downcast_ref::<arrow::array::ListArray>()
            .unwrap()
            .values()
            .len()
    );
    assert_eq!(child.parts.last().unwrap().role, PartRole::Values);
}

#[test]
fn structs_with_hundreds_of_fields_round_trip() {
    // More children than a one-byte varint holds.
    let fields: Fields = (0..300)
        .map(|i| field(&format!("f{i}"), DataType::Int32, true))
        .collect();
    let mut rng = Rng(11);
    let array = random_array(&DataType::Struct(fields), 40, true, &mut rng);
    assert_round_trip("wide struct", array.as_ref(), &CodecChoice::Auto);
}

#[test]
fn degenerate_shapes_round_trip() {
    let empty_struct = StructArray::new_empty_fields(
        9,
        Some(NullBuffer::from(vec![
            true, false, true, true, false, true, true, true, true,
        ])),
    );
    assert_round_trip("struct of no fields", &empty_struct, &CodecChoice::Auto);
    let zero_size = FixedSizeListArray::try_new_with_length(
        list_field(DataType::Int32),
        0,
        Arc::new(Int32Array::from(Vec::<i32>::new())),
        None,
        12,
    )
    .unwrap();
    assert_round_trip("fixed-size list of size 0", &zero_size, &CodecChoice::Auto);
}

/// `depth` lists around an Int32.
fn nested_lists(depth: usize) -> DataType {
    (0..depth).fold(DataType::Int32, |inner, _| {
        DataType::List(list_field(inner))
    })
}

#[test]
fn nesting_is_bounded_on_both_sides() {
    let deep = new_null_array(&nested_lists(16), 3);
    assert_round_trip("16 lists deep", &deep, &CodecChoice::Auto);
    let too_deep = new_null_array(&nested_lists(17), 3);
    let error = column::compress(&too_deep, &CodecChoice::Auto).unwrap_err();
    assert!(matches!(error, colzip::Error::Unsupported(_)), "{error}");
}

// ---- corrupt containers ----

/// The container with its CRC (the last 4 bytes) made right again, so that the reader's
/// structural checks are what is tested.
fn fix_crc(bytes: &mut [u8]) {
    let body = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
}

fn decode(bytes: &[u8]) -> colzip::Result<ArrayRef> {
    column::decompress(&CompressedColumn::from_bytes(bytes)?)
}

fn sample_nested() -> Vec<ArrayRef> {
    let mut rng = Rng(99);
    nested_types()
        .iter()
        .map(|t| random_array(t, 30, true, &mut rng))
        .collect()
}

#[test]
fn truncated_nested_containers_are_errors() {
    for array in sample_nested() {
        let mut bytes = column::compress(array.as_ref(), &"stored".parse().unwrap())
            .unwrap()
            .to_bytes()
            .unwrap();
        for len in (0..bytes.len()).step_by(3) {
            assert!(
                decode(&bytes[..len]).is_err(),
                "{}: truncated to {len}",
                array.data_type()
            );
            // Truncated with a right CRC: the structure itself must be found short.
            if len >= 9 {
                let mut cut = bytes[..len].to_vec();
                fix_crc(&mut cut);
                assert!(decode(&cut).is_err(), "{}: cut to {len}", array.data_type());
            }
        }
        fix_crc(&mut bytes);
        assert_eq!(decode(&bytes).unwrap().as_ref(), array.as_ref());
    }
}

#[test]
fn every_changed_byte_is_an_error_or_the_original() {
    for array in sample_nested() {
        let bytes = column::compress(array.as_ref(), &"stored".parse().unwrap())
            .unwrap()
            .to_bytes()
            .unwrap();
        for at in 4..bytes.len() - 4 {
            for delta in [1u8, 0x80, 0xff] {
                let mut bad = bytes.clone();
                bad[at] = bad[at].wrapping_add(delta);
                fix_crc(&mut bad);
                if let Ok(back) = decode(&bad) {
                    // A changed name or metadata byte may still decode; the values not.
                    assert_eq!(back.len(), array.len(), "byte {at} + {delta}");
                }
            }
        }
    }
}

/// Finds `part`'s stored bytes in the container (after its checksum), rewrites them with
/// `rewrite` and fixes the part checksum and the CRC.
fn rewrite_part(
    container: &[u8],
    part: &column::CompressedPart,
    rewrite: impl Fn(&mut [u8]),
) -> Vec<u8> {
    let mut needle = part.checksum.to_le_bytes().to_vec();
    needle.extend_from_slice(&part.bytes);
    let at = container
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the part is in its container")
        + 8;
    let mut bytes = container.to_vec();
    let stored = &mut bytes[at..at + part.bytes.len()];
    rewrite(stored);
    let checksum = column::part_checksum(stored);
    bytes[at - 8..at].copy_from_slice(&checksum.to_le_bytes());
    fix_crc(&mut bytes);
    bytes
}

#[test]
fn rewritten_list_lengths_are_errors() {
    let lists: Vec<ArrayRef> = vec![
        Arc::new(GenericListArray::<i32>::from_iter_primitive::<
            arrow::datatypes::Int32Type,
            _,
            _,
        >((0..40).map(|i| {
            (i % 5 != 0).then(|| (0..i % 4).map(Some).collect::<Vec<_>>())
        }))),
        random_array(
            &DataType::Map(map_entries(DataType::Int32), false),
            40,
            true,
            &mut Rng(3),
        ),
        random_array(
            &DataType::ListView(list_field(DataType::Int32)),
            40,
            true,
            &mut Rng(5),
        ),
    ];
    for array in lists {
        let compressed = column::compress(array.as_ref(), &"stored".parse().unwrap()).unwrap();
        let container = compressed.to_bytes().unwrap();
        let lengths = compressed
            .root()
            .parts
            .iter()
            .find(|p| p.role == PartRole::Lengths)
            .unwrap();
        assert_eq!(lengths.width, 1, "{}", array.data_type());
        // One more value than the child has, one fewer, and a length past the end.
        let rewrites: [fn(&mut [u8]); 3] = [
            |b| b[3] += 1,
            |b| {
                let i = b.iter().position(|&l| l > 0).unwrap();
                b[i] -= 1
            },
            |b| b[0] = 0xff,
        ];
        for rewrite in rewrites {
            let bad = rewrite_part(&container, lengths, rewrite);
            let error = decode(&bad).unwrap_err();
            assert!(
                matches!(error, colzip::Error::Format(_) | colzip::Error::Arrow(_)),
                "{}: {error:?}",
                array.data_type()
            );
        }
    }
}

#[test]
fn rewritten_nested_types_are_errors() {
    let mut rng = Rng(17);
    let pairs = [
        (
            DataType::FixedSizeList(list_field(DataType::Float64), 3),
            DataType::FixedSizeList(list_field(DataType::Float64), 4),
        ),
        (
            DataType::Struct(Fields::from(vec![field("a", DataType::Int32, true)])),
            DataType::Struct(Fields::from(vec![
                field("a", DataType::Int32, true),
                field("b", DataType::Int32, true),
            ])),
        ),
        (
            DataType::List(list_field(DataType::Int32)),
            DataType::List(list_field(DataType::Int64)),
        ),
        (
            DataType::List(list_field(DataType::Int32)),
            DataType::FixedSizeList(list_field(DataType::Int32), 2),
        ),
        (
            DataType::Map(map_entries(DataType::Int32), false),
            DataType::List(list_field(DataType::Int32)),
        ),
    ];
    for (written, claimed) in pairs {
        let array = random_array(&written, 30, true, &mut rng);
        let container = column::compress(array.as_ref(), &CodecChoice::Auto)
            .unwrap()
            .to_bytes()
            .unwrap();
        let mut old_field = Vec::new();
        column::write_field(&mut old_field, &Field::new("", written.clone(), true)).unwrap();
        let mut new_field = Vec::new();
        column::write_field(&mut new_field, &Field::new("", claimed.clone(), true)).unwrap();
        assert_eq!(&container[5..5 + old_field.len()], &old_field[..]);
        let mut bad = container[..5].to_vec();
        bad.extend_from_slice(&new_field);
        bad.extend_from_slice(&container[5 + old_field.len()..]);
        fix_crc(&mut bad);
        assert!(decode(&bad).is_err(), "{written} read as {claimed}");
    }
}

#[test]
fn corrupt_type_encodings_are_errors() {
    // A map whose entries are not a two-field struct, a negative fixed-size list size,
    // and a struct claiming more fields than the bytes hold.
    let bad_fields: [&[u8]; 3] = [
        &[1, 0, 0, 0, 36, 0, 0, 0, 4, 0],
        &[1, 0, 0, 0, 34, 0, 1, 0, 4, 0xff, 0xff, 0xff, 0xff, 0x0f],
        &[1, 0, 0, 0, 35, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 1, 0, 4],
    ];
    for bytes in bad_fields {
        assert!(column::read_fields(bytes).is_err(), "{bytes:?}");
    }
}

#[test]
fn archives_hold_nested_columns() {
    use arrow::array::RecordBatch;
    use colzip::archive::{ArchiveReader, ArchiveWriter, Source};
    let mut rng = Rng(23);
    let types = nested_types();
    let batches: Vec<RecordBatch> = (0..3)
        .map(|_| {
            // Every field nullable, whether or not this batch drew a null.
            RecordBatch::try_from_iter_with_nullable(
                types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (format!("c{i}"), random_array(t, 200, true, &mut rng), true)),
            )
            .unwrap()
        })
        .collect();
    let schema = batches[0].schema();
    let mut writer = ArchiveWriter::new(Vec::new(), schema.clone(), Source::ArrowIpc).unwrap();
    for batch in &batches {
        writer.write_batch(batch, &CodecChoice::Auto).unwrap();
    }
    let bytes = writer.finish(false).unwrap();
    let mut reader = ArchiveReader::new(bytes.as_slice()).unwrap();
    let mut back = Vec::new();
    while let Some(batch) = reader.next_batch().unwrap() {
        back.push(batch);
    }
    assert_eq!(back, batches);
}
