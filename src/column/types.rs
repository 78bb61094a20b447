//! A compact, panic-free binary encoding of Arrow fields and data types for the container.
//!
//! Arrow IPC's flatbuffer schema would do, but its reader unwraps and panics on some
//! malformed input; colzip promises an `Err` for every bad container, so it writes its own.
//!
//! Nested types (tags 32–38), unions (39) and run-end encoded types (40) carry their
//! child fields in full (name, nullability, metadata, type), so a round trip keeps them;
//! nesting is bounded by [`MAX_DEPTH`] on both sides, so whatever is written can be read
//! back.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{
    DataType, Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type, Field, Fields,
    IntervalUnit, TimeUnit, UnionFields, UnionMode, validate_decimal_precision_and_scale,
};

use super::bytes::Reader;
use crate::codec::varint;
use crate::{Error, Result};

/// Nesting deeper than this is rejected when reading and when writing (it guards the
/// recursion; a writer refusing what a reader would refuse keeps every container readable).
pub const MAX_DEPTH: usize = 16;

/// Appends `field` (name, nullability, metadata, type).
pub fn write_field(out: &mut Vec<u8>, field: &Field) -> Result<()> {
    write_field_at(out, field, 0)
}

fn write_field_at(out: &mut Vec<u8>, field: &Field, depth: usize) -> Result<()> {
    write_str(out, field.name());
    out.push(u8::from(field.is_nullable()));
    let mut metadata: Vec<_> = field.metadata().iter().collect();
    metadata.sort();
    varint::write_u64(out, metadata.len() as u64);
    for (key, value) in metadata {
        write_str(out, key);
        write_str(out, value);
    }
    write_type_at(out, field.data_type(), depth)
}

/// Reads a field written by [`write_field`].
pub fn read_field(reader: &mut Reader<'_>) -> Result<Field> {
    read_field_at(reader, 0)
}

fn read_field_at(reader: &mut Reader<'_>, depth: usize) -> Result<Field> {
    let name = reader.string()?;
    let nullable = match reader.u8()? {
        0 => false,
        1 => true,
        other => return Err(Error::format(format!("bad nullability flag {other}"))),
    };
    let count = reader.varint()?;
    let mut metadata = HashMap::new();
    let mut previous: Option<String> = None;
    for _ in 0..count {
        let key = reader.string()?;
        let value = reader.string()?;
        // Written sorted and unique: any other order or a repeated key is not ours.
        if previous.as_ref().is_some_and(|p| *p >= key) {
            return Err(Error::format(format!(
                "field '{name}': metadata keys not in strictly increasing order at '{key}'"
            )));
        }
        previous = Some(key.clone());
        metadata.insert(key, value);
    }
    let data_type = read_type(reader, depth)?;
    Ok(Field::new(name, data_type, nullable).with_metadata(metadata))
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    varint::write_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn time_unit_code(unit: &TimeUnit) -> u8 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }
}

fn time_unit(code: u8) -> Result<TimeUnit> {
    Ok(match code {
        0 => TimeUnit::Second,
        1 => TimeUnit::Millisecond,
        2 => TimeUnit::Microsecond,
        3 => TimeUnit::Nanosecond,
        _ => return Err(Error::format(format!("bad time unit code {code}"))),
    })
}

/// Appends `data_type`; errors on types the column layer does not support.
pub fn write_type(out: &mut Vec<u8>, data_type: &DataType) -> Result<()> {
    write_type_at(out, data_type, 0)
}

fn write_type_at(out: &mut Vec<u8>, data_type: &DataType, depth: usize) -> Result<()> {
    use DataType::*;
    if depth > MAX_DEPTH {
        return Err(Error::Unsupported(format!(
            "data types nested more than {MAX_DEPTH} deep are not supported by the column layer"
        )));
    }
    let simple = match data_type {
        Null => Some(0),
        Boolean => Some(1),
        Int8 => Some(2),
        Int16 => Some(3),
        Int32 => Some(4),
        Int64 => Some(5),
        UInt8 => Some(6),
        UInt16 => Some(7),
        UInt32 => Some(8),
        UInt64 => Some(9),
        Float16 => Some(10),
        Float32 => Some(11),
        Float64 => Some(12),
        Date32 => Some(13),
        Date64 => Some(14),
        Utf8 => Some(24),
        LargeUtf8 => Some(25),
        Utf8View => Some(26),
        Binary => Some(27),
        LargeBinary => Some(28),
        BinaryView => Some(29),
        _ => None,
    };
    if let Some(tag) = simple {
        out.push(tag);
        return Ok(());
    }
    match data_type {
        Time32(unit) => out.extend_from_slice(&[15, time_unit_code(unit)]),
        Time64(unit) => out.extend_from_slice(&[16, time_unit_code(unit)]),
        Timestamp(unit, tz) => {
            out.extend_from_slice(&[17, time_unit_code(unit)]);
            match tz {
                None => out.push(0),
                Some(tz) => {
                    out.push(1);
                    write_str(out, tz);
                }
            }
        }
        Duration(unit) => out.extend_from_slice(&[18, time_unit_code(unit)]),
        Interval(unit) => out.extend_from_slice(&[
            19,
            match unit {
                IntervalUnit::YearMonth => 0,
                IntervalUnit::DayTime => 1,
                IntervalUnit::MonthDayNano => 2,
            },
        ]),
        Decimal32(p, s) => out.extend_from_slice(&[20, *p, *s as u8]),
        Decimal64(p, s) => out.extend_from_slice(&[21, *p, *s as u8]),
        Decimal128(p, s) => out.extend_from_slice(&[22, *p, *s as u8]),
        Decimal256(p, s) => out.extend_from_slice(&[23, *p, *s as u8]),
        FixedSizeBinary(width) => {
            out.push(30);
            varint::write_u64(out, *width as u64);
        }
        Dictionary(key, value) => {
            out.push(31);
            write_type_at(out, key, depth + 1)?;
            write_type_at(out, value, depth + 1)?;
        }
        List(field) => {
            out.push(32);
            write_field_at(out, field, depth + 1)?;
        }
        LargeList(field) => {
            out.push(33);
            write_field_at(out, field, depth + 1)?;
        }
        FixedSizeList(field, size) => {
            out.push(34);
            write_field_at(out, field, depth + 1)?;
            let size = u64::try_from(*size)
                .map_err(|_| Error::Unsupported(format!("fixed-size list of size {size}")))?;
            varint::write_u64(out, size);
        }
        Struct(fields) => {
            out.push(35);
            varint::write_u64(out, fields.len() as u64);
            for field in fields {
                write_field_at(out, field, depth + 1)?;
            }
        }
        Map(entries, keys_sorted) => {
            check_map_entries(entries).map_err(|e| Error::Unsupported(e.to_string()))?;
            out.push(36);
            write_field_at(out, entries, depth + 1)?;
            out.push(u8::from(*keys_sorted));
        }
        ListView(field) => {
            out.push(37);
            write_field_at(out, field, depth + 1)?;
        }
        LargeListView(field) => {
            out.push(38);
            write_field_at(out, field, depth + 1)?;
        }
        Union(fields, mode) => {
            // Arrow 59's `UnionFields` constructors refuse negative or repeated ids; checked
            // again so that nothing is written that the reader would refuse.
            check_union_fields(fields).map_err(|e| Error::Unsupported(e.to_string()))?;
            out.push(39);
            out.push(match mode {
                UnionMode::Sparse => 0,
                UnionMode::Dense => 1,
            });
            varint::write_u64(out, fields.len() as u64);
            for (type_id, field) in fields.iter() {
                out.push(type_id as u8);
                write_field_at(out, field, depth + 1)?;
            }
        }
        RunEndEncoded(run_ends, values) => {
            check_run_ends_field(run_ends).map_err(|e| Error::Unsupported(e.to_string()))?;
            out.push(40);
            write_field_at(out, run_ends, depth + 1)?;
            write_field_at(out, values, depth + 1)?;
        }
        other => {
            return Err(Error::Unsupported(format!(
                "Arrow type {other} is not supported by the column layer"
            )));
        }
    }
    Ok(())
}

/// Reads a type written by [`write_type`].
pub fn read_type(reader: &mut Reader<'_>, depth: usize) -> Result<DataType> {
    use DataType::*;
    if depth > MAX_DEPTH {
        return Err(Error::format("data type nested too deeply"));
    }
    let tag = reader.u8()?;
    Ok(match tag {
        0 => Null,
        1 => Boolean,
        2 => Int8,
        3 => Int16,
        4 => Int32,
        5 => Int64,
        6 => UInt8,
        7 => UInt16,
        8 => UInt32,
        9 => UInt64,
        10 => Float16,
        11 => Float32,
        12 => Float64,
        13 => Date32,
        14 => Date64,
        15 => match time_unit(reader.u8()?)? {
            // Arrow has no Time32 of µs or ns (they need 64 bits) and no Time64 of s or ms.
            unit @ (TimeUnit::Second | TimeUnit::Millisecond) => Time32(unit),
            unit => return Err(Error::format(format!("Time32 cannot hold {unit:?}s"))),
        },
        16 => match time_unit(reader.u8()?)? {
            unit @ (TimeUnit::Microsecond | TimeUnit::Nanosecond) => Time64(unit),
            unit => return Err(Error::format(format!("Time64 cannot hold {unit:?}s"))),
        },
        17 => {
            let unit = time_unit(reader.u8()?)?;
            let tz = match reader.u8()? {
                0 => None,
                1 => Some(Arc::from(reader.string()?.as_str())),
                other => return Err(Error::format(format!("bad time zone flag {other}"))),
            };
            Timestamp(unit, tz)
        }
        18 => Duration(time_unit(reader.u8()?)?),
        19 => Interval(match reader.u8()? {
            0 => IntervalUnit::YearMonth,
            1 => IntervalUnit::DayTime,
            2 => IntervalUnit::MonthDayNano,
            other => return Err(Error::format(format!("bad interval unit {other}"))),
        }),
        20..=23 => {
            let precision = reader.u8()?;
            let scale = reader.u8()? as i8;
            let checked = match tag {
                20 => validate_decimal_precision_and_scale::<Decimal32Type>(precision, scale),
                21 => validate_decimal_precision_and_scale::<Decimal64Type>(precision, scale),
                22 => validate_decimal_precision_and_scale::<Decimal128Type>(precision, scale),
                _ => validate_decimal_precision_and_scale::<Decimal256Type>(precision, scale),
            };
            checked.map_err(|e| {
                Error::format(format!(
                    "bad decimal precision {precision} or scale {scale}: {e}"
                ))
            })?;
            match tag {
                20 => Decimal32(precision, scale),
                21 => Decimal64(precision, scale),
                22 => Decimal128(precision, scale),
                _ => Decimal256(precision, scale),
            }
        }
        24 => Utf8,
        25 => LargeUtf8,
        26 => Utf8View,
        27 => Binary,
        28 => LargeBinary,
        29 => BinaryView,
        30 => {
            let width = reader.varint()?;
            FixedSizeBinary(
                i32::try_from(width)
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or_else(|| Error::format(format!("bad fixed-size binary width {width}")))?,
            )
        }
        31 => {
            let key = read_type(reader, depth + 1)?;
            if !key.is_dictionary_key_type() {
                return Err(Error::format(format!("{key} is not a dictionary key type")));
            }
            let value = read_type(reader, depth + 1)?;
            Dictionary(Box::new(key), Box::new(value))
        }
        32 => List(Arc::new(read_field_at(reader, depth + 1)?)),
        33 => LargeList(Arc::new(read_field_at(reader, depth + 1)?)),
        34 => {
            let field = read_field_at(reader, depth + 1)?;
            let size = reader.varint()?;
            let size = i32::try_from(size)
                .map_err(|_| Error::format(format!("bad fixed-size list size {size}")))?;
            FixedSizeList(Arc::new(field), size)
        }
        35 => {
            // No capacity from the count: each field is at least a few bytes of input, so
            // the loop ends at the end of the bytes whatever the count claims.
            let count = reader.varint()?;
            let mut fields = Vec::new();
            for _ in 0..count {
                fields.push(read_field_at(reader, depth + 1)?);
            }
            Struct(Fields::from(fields))
        }
        36 => {
            let entries = read_field_at(reader, depth + 1)?;
            check_map_entries(&entries)?;
            let keys_sorted = match reader.u8()? {
                0 => false,
                1 => true,
                other => return Err(Error::format(format!("bad map keys-sorted flag {other}"))),
            };
            Map(Arc::new(entries), keys_sorted)
        }
        37 => ListView(Arc::new(read_field_at(reader, depth + 1)?)),
        38 => LargeListView(Arc::new(read_field_at(reader, depth + 1)?)),
        39 => {
            let mode = match reader.u8()? {
                0 => UnionMode::Sparse,
                1 => UnionMode::Dense,
                other => return Err(Error::format(format!("bad union mode {other}"))),
            };
            let count = reader.varint()?;
            if count > MAX_UNION_FIELDS {
                return Err(Error::format(format!(
                    "a union of {count} fields (at most {MAX_UNION_FIELDS}, one per type id)"
                )));
            }
            let mut type_ids = Vec::new();
            let mut fields = Vec::new();
            for _ in 0..count {
                let type_id = reader.u8()?;
                let type_id = i8::try_from(type_id)
                    .map_err(|_| Error::format(format!("bad union type id {type_id}")))?;
                type_ids.push(type_id);
                fields.push(read_field_at(reader, depth + 1)?);
            }
            // Checks the ids are non-negative and unique.
            let fields = UnionFields::try_new(type_ids, fields)
                .map_err(|e| Error::format(format!("bad union fields: {e}")))?;
            Union(fields, mode)
        }
        40 => {
            let run_ends = read_field_at(reader, depth + 1)?;
            check_run_ends_field(&run_ends)?;
            let values = read_field_at(reader, depth + 1)?;
            RunEndEncoded(Arc::new(run_ends), Arc::new(values))
        }
        other => return Err(Error::format(format!("unknown data type tag {other}"))),
    })
}

/// A union has at most one field per type id, and type ids are `0..=127`.
const MAX_UNION_FIELDS: u64 = 128;

/// Union type ids as Arrow requires them (`UnionFields::try_new`): non-negative, unique.
fn check_union_fields(fields: &UnionFields) -> Result<()> {
    let mut seen = 0u128;
    for (type_id, _) in fields.iter() {
        let bit = u32::try_from(type_id)
            .ok()
            .and_then(|id| 1u128.checked_shl(id))
            .ok_or_else(|| Error::format(format!("union type id {type_id} is negative")))?;
        if seen & bit != 0 {
            return Err(Error::format(format!("union type id {type_id} repeated")));
        }
        seen |= bit;
    }
    Ok(())
}

/// Run ends as Arrow requires them (`ArrayData::validate`): a non-nullable Int16, Int32 or
/// Int64 field.
fn check_run_ends_field(run_ends: &Field) -> Result<()> {
    if !DataType::is_run_ends_type(run_ends.data_type()) || run_ends.is_nullable() {
        return Err(Error::format(format!(
            "run ends must be a non-nullable Int16, Int32 or Int64 field, not {}{}",
            if run_ends.is_nullable() {
                "a nullable "
            } else {
                ""
            },
            run_ends.data_type()
        )));
    }
    Ok(())
}

/// A map's entries as Arrow requires them (`MapArray::try_new`): a non-nullable struct
/// of two fields, the keys non-nullable.
fn check_map_entries(entries: &Field) -> Result<()> {
    let ok = match entries.data_type() {
        DataType::Struct(fields) => {
            !entries.is_nullable() && fields.len() == 2 && !fields[0].is_nullable()
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::format(format!(
            "map entries must be a non-nullable struct of a non-nullable key and a value, not {}",
            entries.data_type()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_depth_is_bounded_when_writing_and_reading() {
        let lists = |depth: usize| {
            (0..depth).fold(DataType::Int32, |inner, _| {
                DataType::List(Arc::new(Field::new("item", inner, true)))
            })
        };
        let mut buf = Vec::new();
        write_type(&mut buf, &lists(MAX_DEPTH)).unwrap();
        assert_eq!(
            read_type(&mut Reader::new(&buf), 0).unwrap(),
            lists(MAX_DEPTH)
        );
        assert!(write_type(&mut Vec::new(), &lists(MAX_DEPTH + 1)).is_err());
        // Crafted deeper bytes: a List tag and an empty non-nullable field, repeated.
        let mut deep = Vec::new();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend_from_slice(&[32, 0, 0, 0]);
        }
        deep.push(4);
        assert!(read_type(&mut Reader::new(&deep), 0).is_err());
    }

    #[test]
    fn run_ends_arrow_refuses_are_not_written() {
        // (Arrow 59's `UnionFields` constructors all refuse negative or repeated ids.)
        let refused = [
            DataType::RunEndEncoded(
                Arc::new(Field::new("run_ends", DataType::Int32, true)),
                Arc::new(Field::new("values", DataType::Int32, true)),
            ),
            DataType::RunEndEncoded(
                Arc::new(Field::new("run_ends", DataType::UInt32, false)),
                Arc::new(Field::new("values", DataType::Int32, true)),
            ),
        ];
        for data_type in refused {
            let error = write_type(&mut Vec::new(), &data_type).unwrap_err();
            assert!(
                matches!(error, Error::Unsupported(_)),
                "{data_type}: {error}"
            );
        }
    }

    #[test]
    fn fields_round_trip() {
        let types = [
            DataType::Int32,
            DataType::Timestamp(TimeUnit::Microsecond, Some("Europe/Paris".into())),
            DataType::Decimal128(15, 2),
            DataType::Decimal256(50, -3),
            DataType::FixedSizeBinary(12),
            DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8View)),
            DataType::Interval(IntervalUnit::MonthDayNano),
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, false))),
            DataType::LargeListView(Arc::new(
                Field::new("v", DataType::Int8, true)
                    .with_metadata(HashMap::from([("a".to_string(), "b".to_string())])),
            )),
            DataType::FixedSizeList(Arc::new(Field::new("x", DataType::Float64, true)), 3),
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Int32, false),
                Field::new(
                    "b",
                    DataType::LargeList(Arc::new(Field::new("i", DataType::Utf8View, true))),
                    true,
                ),
            ])),
            DataType::Map(
                Arc::new(Field::new(
                    "entries",
                    DataType::Struct(Fields::from(vec![
                        Field::new("key", DataType::Utf8, false),
                        Field::new("value", DataType::Int64, true),
                    ])),
                    false,
                )),
                true,
            ),
            DataType::Union(
                UnionFields::try_new(
                    [5, 2, 9],
                    [
                        Field::new("a", DataType::Int32, true),
                        Field::new("b", DataType::Utf8, false),
                        Field::new(
                            "c",
                            DataType::List(Arc::new(Field::new("i", DataType::Int8, true))),
                            true,
                        ),
                    ],
                )
                .unwrap(),
                UnionMode::Dense,
            ),
            DataType::Union(
                UnionFields::try_new([0], [Field::new("x", DataType::Float64, true)]).unwrap(),
                UnionMode::Sparse,
            ),
            DataType::Union(UnionFields::empty(), UnionMode::Sparse),
            DataType::RunEndEncoded(
                Arc::new(Field::new("run_ends", DataType::Int16, false)),
                Arc::new(Field::new("values", DataType::Utf8, true)),
            ),
            DataType::RunEndEncoded(
                Arc::new(Field::new("ends", DataType::Int64, false)),
                Arc::new(
                    Field::new("v", DataType::Int32, false)
                        .with_metadata(HashMap::from([("m".to_string(), "n".to_string())])),
                ),
            ),
        ];
        for data_type in types {
            let field = Field::new("c", data_type, true)
                .with_metadata(HashMap::from([("k".to_string(), "v".to_string())]));
            let mut buf = Vec::new();
            write_field(&mut buf, &field).unwrap();
            let mut reader = Reader::new(&buf);
            assert_eq!(read_field(&mut reader).unwrap(), field);
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn bad_bytes_are_errors() {
        for bytes in [
            &[][..],
            &[1, b'a'][..],
            &[0, 0, 0, 99][..],
            &[0, 0, 0, 31, 12, 4][..],
            // A list without its field, a map of Int32 entries, a bad sorted flag.
            &[0, 0, 0, 32][..],
            &[0, 0, 0, 36, 0, 0, 0, 4, 0][..],
            &[0, 0, 0, 36, 0, 0, 0, 35, 2, 0, 0, 0, 4, 0, 1, 0, 4, 2][..],
            // Unions: a bad mode, a negative (128) and a repeated type id, more fields than
            // type ids, a field missing.
            &[0, 0, 0, 39, 2, 1, 5, 0, 0, 0, 4][..],
            &[0, 0, 0, 39, 0, 1, 128, 0, 0, 0, 4][..],
            &[0, 0, 0, 39, 0, 2, 5, 0, 0, 0, 4, 5, 0, 0, 0, 4][..],
            &[0, 0, 0, 39, 1, 129, 1][..],
            &[0, 0, 0, 39, 1, 2, 5, 0, 0, 0, 4][..],
            // Run ends: Int32 values as run ends, nullable run ends, no values field.
            &[0, 0, 0, 40, 0, 0, 0, 12, 0, 1, 0, 4][..],
            &[0, 0, 0, 40, 0, 1, 0, 4, 0, 1, 0, 4][..],
            &[0, 0, 0, 40, 0, 0, 0, 4][..],
        ] {
            assert!(read_field(&mut Reader::new(bytes)).is_err());
        }
    }
}
