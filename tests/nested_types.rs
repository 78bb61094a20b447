//! Nested Arrow types (List, LargeList, FixedSizeList, Struct, Map, ListView,
//! LargeListView, sparse and dense Union, RunEndEncoded) round-trip through the column
//! layer to equal arrays, with nulls and slices at every nesting level; corrupt nested
//! containers are errors, never panics.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray, Float64Array,
    GenericListArray, GenericListViewArray, Int32Array, Int64Array, MapArray, OffsetSizeTrait,
    PrimitiveArray, RunArray, StringArray, StringViewArray, StructArray, UnionArray, make_array,
    new_null_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowNativeType, DataType, Field, FieldRef, Fields, Int16Type, Int32Type, Int64Type,
    RunEndIndexType, UnionFields, UnionMode,
};
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
        DataType::Union(fields, mode) => random_union(fields, *mode, len, nullable, rng),
        DataType::RunEndEncoded(run_ends, values) => match run_ends.data_type() {
            DataType::Int16 => random_runs::<Int16Type>(data_type, values, len, nullable, rng),
            DataType::Int32 => random_runs::<Int32Type>(data_type, values, len, nullable, rng),
            _ => random_runs::<Int64Type>(data_type, values, len, nullable, rng),
        },
        other => panic!("no generator for {other}"),
    }
}

/// A union has no validity of its own: its nulls are its children's (none when the
/// union may not be null). Dense offsets go in any order, repeat, and leave child rows
/// unused.
fn random_union(
    fields: &UnionFields,
    mode: UnionMode,
    len: usize,
    nullable: bool,
    rng: &mut Rng,
) -> ArrayRef {
    let ids: Vec<i8> = fields.iter().map(|(id, _)| id).collect();
    let child_nullable = |f: &Field| nullable && f.is_nullable();
    let (type_ids, offsets, children): (Vec<i8>, _, Vec<ArrayRef>) = match mode {
        UnionMode::Sparse => {
            let type_ids = (0..len).map(|_| ids[rng.below(ids.len())]).collect();
            let children = fields
                .iter()
                .map(|(_, f)| random_array(f.data_type(), len, child_nullable(f), rng))
                .collect();
            (type_ids, None, children)
        }
        UnionMode::Dense => {
            // The first child is never empty, so every row has somewhere to point.
            let lengths: Vec<usize> = (0..ids.len())
                .map(|k| rng.below(len / 2 + 3) + usize::from(k == 0))
                .collect();
            let mut type_ids = Vec::new();
            let mut offsets = Vec::new();
            for _ in 0..len {
                let mut k = rng.below(ids.len());
                if lengths[k] == 0 {
                    k = 0;
                }
                type_ids.push(ids[k]);
                offsets.push(rng.below(lengths[k]) as i32);
            }
            let children = fields
                .iter()
                .zip(&lengths)
                .map(|((_, f), &n)| random_array(f.data_type(), n, child_nullable(f), rng))
                .collect();
            (type_ids, Some(ScalarBuffer::from(offsets)), children)
        }
    };
    Arc::new(
        UnionArray::try_new(
            fields.clone(),
            ScalarBuffer::from(type_ids),
            offsets,
            children,
        )
        .unwrap(),
    )
}

/// Runs of 1 to 4 rows, the last cut to `len`; the values have nulls when the array may.
fn random_runs<R: RunEndIndexType>(
    data_type: &DataType,
    values: &FieldRef,
    len: usize,
    nullable: bool,
    rng: &mut Rng,
) -> ArrayRef {
    let mut ends = Vec::new();
    let mut end = 0;
    while end < len {
        end = (end + 1 + rng.below(4)).min(len);
        ends.push(R::Native::usize_as(end));
    }
    let values = random_array(
        values.data_type(),
        ends.len(),
        nullable && values.is_nullable(),
        rng,
    );
    let runs =
        RunArray::<R>::try_new(&PrimitiveArray::<R>::from_iter_values(ends), &values).unwrap();
    // `try_new` names the fields itself; the test's fields carry metadata.
    let data = runs
        .into_data()
        .into_builder()
        .data_type(data_type.clone())
        .build()
        .unwrap();
    make_array(data)
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
    .into_iter()
    .chain(union_and_run_types())
    .collect()
}

/// Type ids that are not `0..n`, in no order.
fn union_fields(fields: Vec<FieldRef>) -> UnionFields {
    let ids = [5, 2, 9, 0, 127];
    UnionFields::try_new(ids[..fields.len()].iter().copied(), fields).unwrap()
}

fn run_ends(data_type: DataType) -> FieldRef {
    field("run_ends", data_type, false)
}

/// Unions (sparse and dense, their fields nested) and run-end encoded arrays (every run
/// end type; strings, nested values), alone and inside other nested types.
fn union_and_run_types() -> Vec<DataType> {
    let point = Fields::from(vec![
        field("a", DataType::Int32, true),
        field("b", DataType::List(list_field(DataType::Utf8)), true),
    ]);
    let mixed = |mode| {
        DataType::Union(
            union_fields(vec![
                field("n", DataType::Int64, true),
                field("s", DataType::Utf8, true),
                field("p", DataType::Struct(point.clone()), true),
            ]),
            mode,
        )
    };
    let strings = DataType::RunEndEncoded(
        run_ends(DataType::Int32),
        field("values", DataType::Utf8, true),
    );
    vec![
        mixed(UnionMode::Sparse),
        mixed(UnionMode::Dense),
        DataType::Union(
            union_fields(vec![
                field("l", DataType::List(list_field(DataType::Int32)), true),
                field("f", DataType::Boolean, false),
                field(
                    "m",
                    DataType::Map(map_entries(DataType::Int32), false),
                    true,
                ),
                field("u", mixed(UnionMode::Sparse), true),
            ]),
            UnionMode::Dense,
        ),
        strings.clone(),
        DataType::RunEndEncoded(
            run_ends(DataType::Int16),
            field("v", DataType::Float64, true),
        ),
        DataType::RunEndEncoded(
            run_ends(DataType::Int64),
            field("values", DataType::Struct(point.clone()), true),
        ),
        DataType::RunEndEncoded(
            run_ends(DataType::Int32),
            field("values", mixed(UnionMode::Dense), true),
        ),
        DataType::List(list_field(DataType::RunEndEncoded(
            run_ends(DataType::Int16),
            field("values", DataType::Int32, true),
        ))),
        DataType::Struct(Fields::from(vec![
            field("id", DataType::Int32, false),
            field("u", mixed(UnionMode::Dense), true),
            field("su", mixed(UnionMode::Sparse), false),
            field("r", strings.clone(), true),
        ])),
        DataType::Union(
            union_fields(vec![
                field("r", strings, true),
                field(
                    "d",
                    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8)),
                    true,
                ),
            ]),
            UnionMode::Sparse,
        ),
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

/// A dense union of ids 5 (Int32), 2 (Utf8) and 9 (a list of Int64), its offsets out of
/// order and repeated, and rows of the children that no row refers to.
fn dense_union() -> UnionArray {
    let fields = union_fields(vec![
        field("n", DataType::Int32, true),
        field("s", DataType::Utf8, true),
        field("l", DataType::List(list_field(DataType::Int64)), true),
    ]);
    let numbers: ArrayRef = Arc::new(Int32Array::from(vec![
        Some(10),
        None,
        Some(12),
        Some(13),
        Some(14),
        Some(15),
    ]));
    let strings: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a"),
        Some("b"),
        None,
        Some("d"),
    ]));
    let lists: ArrayRef = Arc::new(GenericListArray::<i32>::from_iter_primitive::<
        Int64Type,
        _,
        _,
    >(vec![Some(vec![Some(1), None]), None, Some(vec![])]));
    UnionArray::try_new(
        fields,
        ScalarBuffer::from(vec![5, 2, 5, 9, 2, 5, 5, 9, 2, 5]),
        Some(ScalarBuffer::from(vec![4, 1, 2, 0, 1, 3, 2, 2, 3, 5])),
        vec![numbers, strings, lists],
    )
    .unwrap()
}

#[test]
fn union_parts_and_children() {
    let union = dense_union();
    let compressed = assert_round_trip("dense union", &union, &"stored".parse().unwrap());
    let root = compressed.root();
    // No validity: a union's nulls are its children's.
    assert_eq!(root.null_count, 0);
    let parts: Vec<_> = root
        .parts
        .iter()
        .map(|p| (p.role, p.width, p.raw_len))
        .collect();
    assert_eq!(
        parts,
        [(PartRole::Values, 1, 10), (PartRole::Values, 4, 40)],
        "type ids, then offsets"
    );
    let rows: Vec<usize> = root.children.iter().map(|c| c.rows).collect();
    // Each child from its smallest offset to its largest.
    assert_eq!(rows, [4, 3, 3]);

    // Sliced: rows 3..7 reach numbers 2..=3, strings 1 and lists 0; the rest is not kept.
    let sliced = union.slice(3, 4);
    let compressed = assert_round_trip("sliced dense union", &sliced, &CodecChoice::Auto);
    let rows: Vec<usize> = compressed.root().children.iter().map(|c| c.rows).collect();
    assert_eq!(rows, [2, 1, 1]);
    let back = column::decompress(&compressed).unwrap();
    let back = back.as_any().downcast_ref::<UnionArray>().unwrap();
    assert_eq!(back.type_ids(), &[9, 2, 5, 5]);
    assert_eq!(back.value_offset(0), 0);
    assert_eq!(back.value_offset(2), 1);

    // Sliced to rows that use one type id: the other children are empty.
    let compressed = assert_round_trip("one type", &union.slice(5, 2), &CodecChoice::Auto);
    let rows: Vec<usize> = compressed.root().children.iter().map(|c| c.rows).collect();
    assert_eq!(rows, [2, 0, 0]);

    // Sparse: one part, every child of the union's (sliced) rows.
    let sparse = random_array(&union_and_run_types()[0], 30, true, &mut Rng(4));
    let compressed = assert_round_trip("sparse union", &sparse.slice(3, 20), &CodecChoice::Auto);
    let root = compressed.root();
    let parts: Vec<_> = root
        .parts
        .iter()
        .map(|p| (p.role, p.width, p.raw_len))
        .collect();
    assert_eq!(parts, [(PartRole::Values, 1, 20)]);
    assert!(root.children.iter().all(|c| c.rows == 20));
}

#[test]
fn run_end_parts_keep_only_the_runs_of_a_slice() {
    let values = StringArray::from(vec![Some("a"), None, Some("b"), Some("c")]);
    for (run_ends, width) in [
        (
            Arc::new(RunArray::<Int16Type>::try_new(&vec![3i16, 5, 9, 10].into(), &values).unwrap())
                as ArrayRef,
            2,
        ),
        (
            Arc::new(
                RunArray::<Int32Type>::try_new(&vec![3i32, 5, 9, 10].into(), &values).unwrap(),
            ),
            4,
        ),
        (
            Arc::new(
                RunArray::<Int64Type>::try_new(&vec![3i64, 5, 9, 10].into(), &values).unwrap(),
            ),
            8,
        ),
    ] {
        let compressed = assert_round_trip("runs", run_ends.as_ref(), &"stored".parse().unwrap());
        let root = compressed.root();
        assert_eq!((root.rows, root.null_count), (10, 0));
        let parts: Vec<_> = root
            .parts
            .iter()
            .map(|p| (p.role, p.width, p.raw_len))
            .collect();
        assert_eq!(parts, [(PartRole::Values, width, 4 * width as usize)]);
        assert_eq!(root.children[0].rows, 4);
        assert_eq!(root.children[0].null_count, 1);

        // Rows 4..8: the end of run 1 (a null) and most of run 2.
        let sliced = run_ends.slice(4, 4);
        let compressed = assert_round_trip("sliced runs", &sliced, &"stored".parse().unwrap());
        assert_eq!(compressed.root().children[0].rows, 2);
        let ends: Vec<u8> = [1u64, 4]
            .iter()
            .flat_map(|e| e.to_le_bytes()[..width as usize].to_vec())
            .collect();
        assert_eq!(compressed.root().parts[0].bytes.as_slice(), &ends[..]);
        assert_round_trip("sliced runs", &sliced, &CodecChoice::Auto);
        let back = column::decompress(&compressed).unwrap();
        let expected = RunArray::<Int32Type>::try_new(
            &vec![1, 4].into(),
            &StringArray::from(vec![None, Some("b")]),
        )
        .unwrap();
        let as_strings = |a: &dyn Array| arrow::compute::cast(a, &DataType::Utf8).unwrap();
        assert_eq!(&as_strings(back.as_ref()), &as_strings(&expected));
        assert_eq!(back.logical_null_count(), 1);
        assert_eq!(back.len(), 4);
    }
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
    for mode in [UnionMode::Sparse, UnionMode::Dense] {
        let no_fields = UnionArray::try_new(
            UnionFields::empty(),
            ScalarBuffer::from(Vec::<i8>::new()),
            (mode == UnionMode::Dense).then(|| ScalarBuffer::from(Vec::<i32>::new())),
            vec![],
        )
        .unwrap();
        assert_round_trip("union of no fields", &no_fields, &CodecChoice::Auto);
    }
    // One run of every row, and a run-end array of a single row.
    let one_run = RunArray::<Int64Type>::try_new(
        &vec![100_000i64].into(),
        &Int32Array::from(vec![None::<i32>]),
    )
    .unwrap();
    assert_round_trip("one run", &one_run, &CodecChoice::Auto);
    assert_round_trip("one row", &one_run.slice(99_999, 1), &CodecChoice::Auto);
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

fn three_fields() -> Vec<FieldRef> {
    vec![
        field("n", DataType::Int32, true),
        field("s", DataType::Utf8, true),
        field("b", DataType::Boolean, true),
    ]
}

fn sparse() -> UnionMode {
    UnionMode::Sparse
}

fn dense() -> UnionMode {
    UnionMode::Dense
}

fn union_of(mode: UnionMode, ids: [i8; 3]) -> DataType {
    DataType::Union(UnionFields::try_new(ids, three_fields()).unwrap(), mode)
}

/// A change to a part's bytes.
type Rewrite = dyn Fn(&mut [u8]);

#[test]
fn rewritten_union_ids_offsets_and_run_ends_are_errors() {
    let stored: CodecChoice = "stored".parse().unwrap();
    // Rows' type ids 5 2 5 9 2 5 5 9 2 5; offsets as stored (rebased to each child's
    // first row referred to) 2 0 0 0 0 1 0 2 2 3 into children of 4, 3 and 3 rows.
    let union = dense_union();
    let compressed = column::compress(&union, &stored).unwrap();
    let container = compressed.to_bytes().unwrap();
    let (ids, offsets) = (&compressed.root().parts[0], &compressed.root().parts[1]);
    fn set(b: &mut [u8], row: usize, value: i32) {
        b[4 * row..4 * row + 4].copy_from_slice(&value.to_le_bytes())
    }
    let rewrites: [(&column::CompressedPart, &Rewrite); 7] = [
        // Ids not declared: 3, 127, and a negative one.
        (ids, &|b| b[0] = 3),
        (ids, &|b| b[4] = 127),
        (ids, &|b| b[1] = 0x80),
        // An offset past its child, a negative one, the child's last row left out.
        (offsets, &|b| set(b, 0, 4)),
        (offsets, &|b| set(b, 1, -1)),
        (offsets, &|b| set(b, 8, 1)),
        (offsets, &|b| set(b, 3, i32::MAX)),
    ];
    for (i, (part, rewrite)) in rewrites.into_iter().enumerate() {
        let bad = rewrite_part(&container, part, rewrite);
        let error = decode(&bad).unwrap_err();
        assert!(
            matches!(error, colzip::Error::Format(_)),
            "union rewrite {i}: {error:?}"
        );
    }

    let values = StringArray::from(vec![Some("a"), None, Some("b"), Some("c")]);
    let runs = RunArray::<Int32Type>::try_new(&vec![3, 5, 9, 10].into(), &values).unwrap();
    let compressed = column::compress(&runs, &stored).unwrap();
    let container = compressed.to_bytes().unwrap();
    let ends = &compressed.root().parts[0];
    let rewrites: [&Rewrite; 6] = [
        // Not increasing, decreasing, zero, negative, past the rows, short of them.
        &|b| set(b, 0, 5),
        &|b| set(b, 2, 4),
        &|b| set(b, 0, 0),
        &|b| set(b, 0, -3),
        &|b| set(b, 3, 11),
        &|b| set(b, 3, 9),
    ];
    for (i, rewrite) in rewrites.into_iter().enumerate() {
        let bad = rewrite_part(&container, ends, rewrite);
        let error = decode(&bad).unwrap_err();
        assert!(
            matches!(error, colzip::Error::Format(_)),
            "run-end rewrite {i}: {error:?}"
        );
    }
    // The container as written still decodes.
    assert_eq!(decode(&container).unwrap().as_ref(), &runs as &dyn Array);
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
        // A sparse union read as dense (no offsets part) and back (an extra part), with
        // an id changed (9 not declared), as a struct (no validity), a struct with nulls
        // read as a union (a validity part).
        (union_of(sparse(), [5, 2, 9]), union_of(dense(), [5, 2, 9])),
        (union_of(dense(), [5, 2, 9]), union_of(sparse(), [5, 2, 9])),
        (union_of(sparse(), [5, 2, 9]), union_of(sparse(), [5, 2, 8])),
        (union_of(dense(), [5, 2, 9]), union_of(dense(), [5, 8, 9])),
        (
            DataType::Struct(Fields::from(three_fields())),
            union_of(sparse(), [5, 2, 9]),
        ),
        (
            union_of(sparse(), [5, 2, 9]),
            DataType::Struct(Fields::from(three_fields())),
        ),
        // Run ends of another width, and run-end encoded strings read as a list.
        (
            DataType::RunEndEncoded(run_ends(DataType::Int32), list_field(DataType::Utf8)),
            DataType::RunEndEncoded(run_ends(DataType::Int64), list_field(DataType::Utf8)),
        ),
        (
            DataType::RunEndEncoded(run_ends(DataType::Int16), list_field(DataType::Utf8)),
            DataType::List(list_field(DataType::Utf8)),
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
