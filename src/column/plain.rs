//! Arrow arrays <-> plain parts: the uncompressed byte buffers the codecs see.
//!
//! Every array becomes a [`PlainNode`]: its row count, its null count and a list of
//! [`PlainPart`]s, plus child nodes (a dictionary's values, a list's items, a struct's
//! fields: see the `nested` module; a union's children: the `union` module; a run-end
//! encoded array's values: the `run_end` module). Parts are kept apart because
//! they compress best apart: a validity bitmap, fixed-width values, the lengths of
//! variable-width values and their concatenated bytes.
//!
//! Two typed narrowings make the codecs' work easier without losing anything: decimals
//! whose values all fit in 4 or 8 bytes are stored at that width (sign-extended back on
//! decode), and string/binary lengths use the narrowest of 1/2/4/8 bytes that holds the
//! longest value. Offsets are rebuilt from lengths, so sliced arrays and arrays whose
//! first offset is not zero round-trip to an equal array.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BinaryArray, BinaryViewArray, BinaryViewBuilder,
    BooleanArray, DictionaryArray, FixedSizeBinaryArray, LargeBinaryArray, LargeStringArray,
    NullArray, OffsetSizeTrait, PrimitiveArray, StringArray, StringViewArray, make_view,
};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::DataType;

use super::{nested, run_end, union};
use crate::{Error, Result};

/// What a part holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PartRole {
    /// The validity bitmap, one bit per row (present only when the array has nulls).
    Validity = 1,
    /// Fixed-width values (or a boolean array's bits).
    Values = 2,
    /// Byte lengths of variable-width values.
    Lengths = 3,
    /// Concatenated bytes of variable-width values.
    Data = 4,
}

impl PartRole {
    pub fn from_u8(byte: u8) -> Option<Self> {
        Some(match byte {
            1 => PartRole::Validity,
            2 => PartRole::Values,
            3 => PartRole::Lengths,
            4 => PartRole::Data,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            PartRole::Validity => "validity",
            PartRole::Values => "values",
            PartRole::Lengths => "lengths",
            PartRole::Data => "data",
        }
    }
}

/// One uncompressed buffer of a column: an Arrow buffer, so that a column's values are
/// handed to the codecs (and decoded parts back to arrays) without copies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainPart {
    pub role: PartRole,
    /// Bytes per element as stored (1 for bitmaps and string bytes).
    pub width: u32,
    pub bytes: Buffer,
}

impl PlainPart {
    /// The symbol width a codec should try for this part: the largest of 8/4/2/1 dividing
    /// the element width.
    pub fn symbol_width(&self) -> usize {
        [8, 4, 2, 1]
            .into_iter()
            .find(|s| (self.width as usize).is_multiple_of(*s))
            .unwrap_or(1)
    }
}

/// An array as plain parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainNode {
    pub rows: usize,
    pub null_count: usize,
    pub parts: Vec<PlainPart>,
    pub children: Vec<PlainNode>,
}

impl PlainNode {
    /// Total bytes of all parts, children included.
    pub fn plain_bytes(&self) -> usize {
        self.parts.iter().map(|p| p.bytes.len()).sum::<usize>()
            + self
                .children
                .iter()
                .map(PlainNode::plain_bytes)
                .sum::<usize>()
    }

    /// Every part, depth first (the order the container stores them in).
    pub fn all_parts(&self) -> Vec<&PlainPart> {
        let mut parts: Vec<&PlainPart> = self.parts.iter().collect();
        for child in &self.children {
            parts.extend(child.all_parts());
        }
        parts
    }
}

/// Byte width of a fixed-width type's values, or `None` for other types.
fn fixed_width(data_type: &DataType) -> Option<usize> {
    match data_type {
        DataType::FixedSizeBinary(width) => usize::try_from(*width).ok(),
        DataType::Boolean => None,
        other => other.primitive_width(),
    }
}

/// The bytes of `bits` from its first bit, the bits past its last one cleared: a slice's
/// last byte can hold the next rows' bits, which are not part of the column, and the same
/// rows must give the same part however they were sliced.
fn bitmap_bytes(bits: &BooleanBuffer) -> Buffer {
    let bytes = bits.sliced();
    let used = bits.len() % 8;
    match bytes.last() {
        Some(&last) if used != 0 && last >> used != 0 => {
            let mut owned = bytes.to_vec();
            let end = owned.len() - 1;
            owned[end] = last & ((1u8 << used) - 1);
            Buffer::from_vec(owned)
        }
        _ => bytes,
    }
}

/// Splits `array` into plain parts.
pub fn encode(array: &dyn Array) -> Result<PlainNode> {
    let rows = array.len();
    let mut parts = Vec::new();
    if let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) {
        parts.push(PlainPart {
            role: PartRole::Validity,
            width: 1,
            bytes: bitmap_bytes(nulls.inner()),
        });
    }
    let null_count = array.nulls().map_or(0, |n| n.null_count());
    let mut children = Vec::new();
    let data_type = array.data_type();
    match data_type {
        DataType::Null => {}
        DataType::Boolean => {
            parts.push(PlainPart {
                role: PartRole::Values,
                width: 1,
                bytes: bitmap_bytes(array.as_boolean().values()),
            });
        }
        DataType::Utf8 | DataType::Binary => push_offset_parts::<i32>(array, &mut parts),
        DataType::LargeUtf8 | DataType::LargeBinary => push_offset_parts::<i64>(array, &mut parts),
        DataType::Utf8View => {
            let values = array.as_string_view();
            push_var_parts(
                values.iter().map(|v| v.unwrap_or("").as_bytes()),
                rows,
                &mut parts,
            );
        }
        DataType::BinaryView => {
            let values = array.as_binary_view();
            push_var_parts(values.iter().map(|v| v.unwrap_or(&[])), rows, &mut parts);
        }
        DataType::Dictionary(_, _) => {
            let dictionary = array.as_any_dictionary();
            let keys = encode(dictionary.keys())?;
            parts = keys.parts;
            children.push(encode(dictionary.values().as_ref())?);
        }
        nested if nested::is_nested(nested) => nested::encode(array, &mut parts, &mut children)?,
        DataType::Union(..) => union::encode(array, &mut parts, &mut children)?,
        DataType::RunEndEncoded(..) => run_end::encode(array, &mut parts, &mut children)?,
        other => {
            let width = fixed_width(other).ok_or_else(|| {
                Error::Unsupported(format!(
                    "Arrow type {other} is not supported by the column layer"
                ))
            })?;
            let data = array.to_data();
            let bytes = data.buffers()[0].slice_with_length(data.offset() * width, rows * width);
            let narrowed = match other {
                DataType::Decimal128(..) | DataType::Decimal256(..) => narrow(&bytes, width),
                _ => None,
            };
            let (width, bytes) = match narrowed {
                Some((narrow_width, narrow_bytes)) => {
                    (narrow_width, Buffer::from_vec(narrow_bytes))
                }
                None => (width, bytes),
            };
            parts.push(PlainPart {
                role: PartRole::Values,
                width: width as u32,
                bytes,
            });
        }
    }
    Ok(PlainNode {
        rows,
        null_count,
        parts,
        children,
    })
}

fn push_offset_parts<O: OffsetSizeTrait>(array: &dyn Array, parts: &mut Vec<PlainPart>) {
    let data = array.to_data();
    let offsets = ScalarBuffer::<O>::new(data.buffers()[0].clone(), data.offset(), data.len() + 1);
    let (first, last) = (offsets[0].as_usize(), offsets[data.len()].as_usize());
    let lengths = offsets.windows(2).map(|w| (w[1] - w[0]).as_usize() as u64);
    parts.push(lengths_part(lengths, data.len()));
    parts.push(PlainPart {
        role: PartRole::Data,
        width: 1,
        bytes: data.buffers()[1].slice_with_length(first, last - first),
    });
}

fn push_var_parts<'a>(
    values: impl Iterator<Item = &'a [u8]> + Clone,
    rows: usize,
    parts: &mut Vec<PlainPart>,
) {
    parts.push(lengths_part(values.clone().map(|v| v.len() as u64), rows));
    let total = values.clone().map(<[u8]>::len).sum();
    let mut data = Vec::with_capacity(total);
    values.for_each(|v| data.extend_from_slice(v));
    parts.push(PlainPart {
        role: PartRole::Data,
        width: 1,
        bytes: Buffer::from_vec(data),
    });
}

/// Lengths at the narrowest width of 1/2/4/8 bytes that holds the largest.
pub(super) fn lengths_part(lengths: impl Iterator<Item = u64> + Clone, rows: usize) -> PlainPart {
    let max = lengths.clone().max().unwrap_or(0);
    let width = match max {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xffff_ffff => 4,
        _ => 8,
    };
    let mut bytes = Vec::with_capacity(rows * width);
    for length in lengths {
        bytes.extend_from_slice(&length.to_le_bytes()[..width]);
    }
    PlainPart {
        role: PartRole::Lengths,
        width: width as u32,
        bytes: Buffer::from_vec(bytes),
    }
}

/// Stores little-endian two's-complement values of `width` bytes at the narrowest of
/// 4/8/16 bytes from which sign extension gives them back (`None`: no narrower width).
fn narrow(bytes: &[u8], width: usize) -> Option<(usize, Vec<u8>)> {
    let fits = |narrow: usize| {
        bytes.chunks_exact(width).all(|value| {
            let fill = if value[narrow - 1] & 0x80 != 0 {
                0xff
            } else {
                0
            };
            value[narrow..].iter().all(|&b| b == fill)
        })
    };
    let narrow_width = [4, 8, 16]
        .into_iter()
        .filter(|&w| w < width)
        .find(|&w| fits(w))
        .unwrap_or(width);
    if narrow_width == width {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / width * narrow_width);
    for value in bytes.chunks_exact(width) {
        out.extend_from_slice(&value[..narrow_width]);
    }
    Some((narrow_width, out))
}

/// Sign-extends values of `from` bytes to `to` bytes. The decimal widths a scan meets
/// most (4 or 8 bytes back to Decimal128's 16) go through typed conversions, which run at
/// memory speed; a query's scan widens every decimal it reads.
fn widen(bytes: &[u8], from: usize, to: usize) -> Buffer {
    match (from, to) {
        (4, 16) => Buffer::from_vec(values_of::<4, i128>(bytes, |b| {
            i32::from_le_bytes(b).into()
        })),
        (8, 16) => Buffer::from_vec(values_of::<8, i128>(bytes, |b| {
            i64::from_le_bytes(b).into()
        })),
        _ => {
            let mut out = vec![0u8; bytes.len() / from * to];
            for (value, wide) in bytes.chunks_exact(from).zip(out.chunks_exact_mut(to)) {
                wide[..from].copy_from_slice(value);
                if value[from - 1] & 0x80 != 0 {
                    wide[from..].fill(0xff);
                }
            }
            Buffer::from_vec(out)
        }
    }
}

/// The values of `bytes` taken `N` bytes at a time (typed loops: a scan reads every
/// decimal and length of the blocks it touches).
fn values_of<const N: usize, T>(bytes: &[u8], value: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|chunk| {
            let mut le = [0u8; N];
            le.copy_from_slice(chunk);
            value(le)
        })
        .collect()
}

/// Reads parts in order, checking each one's role and size.
pub(super) struct Parts {
    parts: std::vec::IntoIter<PlainPart>,
    peeked: Option<PlainPart>,
}

impl Parts {
    fn next(&mut self) -> Option<PlainPart> {
        self.peeked.take().or_else(|| self.parts.next())
    }

    pub(super) fn take(&mut self, role: PartRole) -> Result<PlainPart> {
        match self.next() {
            Some(part) if part.role == role => Ok(part),
            Some(part) => Err(Error::format(format!(
                "expected a {} part, found {}",
                role.name(),
                part.role.name()
            ))),
            None => Err(Error::format(format!("missing the {} part", role.name()))),
        }
    }

    fn take_optional(&mut self, role: PartRole) -> Option<PlainPart> {
        match self.next() {
            Some(part) if part.role == role => Some(part),
            other => {
                self.peeked = other;
                None
            }
        }
    }
}

/// Rebuilds an array of `data_type` from its plain parts; every size is checked.
pub fn decode(data_type: &DataType, node: PlainNode) -> Result<ArrayRef> {
    let PlainNode {
        rows,
        null_count,
        parts,
        children,
    } = node;
    let mut parts = Parts {
        parts: parts.into_iter(),
        peeked: None,
    };
    let nulls = match parts.take_optional(PartRole::Validity) {
        Some(validity) => {
            expect_len("validity", validity.bytes.len(), rows.div_ceil(8))?;
            let nulls = NullBuffer::new(BooleanBuffer::new(validity.bytes, 0, rows));
            if nulls.null_count() != null_count {
                return Err(Error::format(format!(
                    "validity has {} nulls, the header says {null_count}",
                    nulls.null_count()
                )));
            }
            Some(nulls)
        }
        None if null_count > 0 => return Err(Error::format("null count without a validity part")),
        None => None,
    };
    let mut children = children.into_iter();
    let array: ArrayRef = match data_type {
        DataType::Null => {
            if nulls.is_some() {
                return Err(Error::format("a Null column with a validity part"));
            }
            Arc::new(NullArray::new(rows))
        }
        DataType::Boolean => {
            let values = parts.take(PartRole::Values)?;
            expect_len("boolean values", values.bytes.len(), rows.div_ceil(8))?;
            let values = BooleanBuffer::new(values.bytes, 0, rows);
            // Both are `rows` long (checked above), which is all `new` asserts.
            Arc::new(BooleanArray::new(values, nulls))
        }
        DataType::Utf8 => {
            let (offsets, data) = offsets_and_data::<i32>(data_type, rows, &mut parts)?;
            Arc::new(StringArray::try_new(offsets, data, nulls)?)
        }
        DataType::Binary => {
            let (offsets, data) = offsets_and_data::<i32>(data_type, rows, &mut parts)?;
            Arc::new(BinaryArray::try_new(offsets, data, nulls)?)
        }
        DataType::LargeUtf8 => {
            let (offsets, data) = offsets_and_data::<i64>(data_type, rows, &mut parts)?;
            Arc::new(LargeStringArray::try_new(offsets, data, nulls)?)
        }
        DataType::LargeBinary => {
            let (offsets, data) = offsets_and_data::<i64>(data_type, rows, &mut parts)?;
            Arc::new(LargeBinaryArray::try_new(offsets, data, nulls)?)
        }
        DataType::Utf8View | DataType::BinaryView => {
            view_array(data_type, rows, nulls, &mut parts)?
        }
        DataType::Dictionary(key_type, value_type) => {
            let values = parts.take(PartRole::Values)?;
            let key_width = key_type.primitive_width().unwrap_or(0);
            if values.width as usize != key_width {
                return Err(Error::format(format!(
                    "{key_type} dictionary keys stored {} bytes wide",
                    values.width
                )));
            }
            expect_len(
                "dictionary keys",
                values.bytes.len(),
                rows.saturating_mul(key_width),
            )?;
            let child = children
                .next()
                .ok_or_else(|| Error::format("dictionary without its values"))?;
            let dictionary = decode(value_type, child)?;
            dictionary_array(key_type, rows, nulls, values.bytes, dictionary)?
        }
        nested if nested::is_nested(nested) => {
            nested::decode(nested, rows, nulls, &mut parts, &mut children)?
        }
        DataType::Union(..) => union::decode(data_type, rows, nulls, &mut parts, &mut children)?,
        DataType::RunEndEncoded(..) => {
            run_end::decode(data_type, rows, nulls, &mut parts, &mut children)?
        }
        other => {
            let width = fixed_width(other).ok_or_else(|| {
                Error::Unsupported(format!(
                    "Arrow type {other} is not supported by the column layer"
                ))
            })?;
            let values = parts.take(PartRole::Values)?;
            let stored = values.width as usize;
            let narrowable = matches!(other, DataType::Decimal128(..) | DataType::Decimal256(..));
            if stored != width && !(narrowable && [4, 8, 16].contains(&stored) && stored < width) {
                return Err(Error::format(format!(
                    "{other} values stored {stored} bytes wide"
                )));
            }
            expect_len("values", values.bytes.len(), rows.saturating_mul(stored))?;
            let bytes = if stored == width {
                values.bytes
            } else {
                widen(&values.bytes, stored, width)
            };
            fixed_width_array(other, rows, nulls, bytes)?
        }
    };
    if let Some(extra) = parts.next() {
        return Err(Error::format(format!(
            "unexpected {} part",
            extra.role.name()
        )));
    }
    if children.next().is_some() {
        return Err(Error::format(format!(
            "unexpected child node for {data_type}"
        )));
    }
    Ok(array)
}

pub(super) fn expect_len(what: &str, actual: usize, expected: usize) -> Result<()> {
    if actual == expected {
        Ok(())
    } else {
        Err(Error::format(format!(
            "{what}: {actual} bytes, expected {expected}"
        )))
    }
}

/// `bytes` as a buffer aligned for `T` (a decoded `Vec<u8>`, an empty one especially,
/// need not be; Arrow's typed buffers require it).
pub(super) fn aligned<T>(buffer: Buffer) -> Buffer {
    if buffer.as_ptr().align_offset(std::mem::align_of::<T>()) == 0 {
        buffer
    } else {
        Buffer::from_slice_ref(buffer.as_slice())
    }
}

/// A primitive array of `rows` values from `bytes` (exactly `rows` values long, checked
/// by the caller).
fn primitive<T: ArrowPrimitiveType>(
    rows: usize,
    nulls: Option<NullBuffer>,
    bytes: Buffer,
) -> Result<PrimitiveArray<T>> {
    if bytes.len() != rows.saturating_mul(std::mem::size_of::<T::Native>()) {
        return Err(Error::format(format!(
            "{} values: {} bytes for {rows} rows",
            T::DATA_TYPE,
            bytes.len()
        )));
    }
    let values = ScalarBuffer::<T::Native>::new(aligned::<T::Native>(bytes), 0, rows);
    Ok(PrimitiveArray::<T>::try_new(values, nulls)?)
}

/// The array of a fixed-width type (its values `rows × width` bytes, checked).
fn fixed_width_array(
    data_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    bytes: Buffer,
) -> Result<ArrayRef> {
    use DataType as T;
    use arrow::datatypes::*;
    macro_rules! typed {
        ($t:ty) => {
            Arc::new(primitive::<$t>(rows, nulls, bytes)?) as ArrayRef
        };
    }
    macro_rules! timestamp {
        ($t:ty, $tz:expr) => {
            Arc::new(primitive::<$t>(rows, nulls, bytes)?.with_timezone_opt($tz.clone()))
                as ArrayRef
        };
    }
    macro_rules! decimal {
        ($t:ty, $p:expr, $s:expr) => {
            Arc::new(primitive::<$t>(rows, nulls, bytes)?.with_precision_and_scale(*$p, *$s)?)
                as ArrayRef
        };
    }
    Ok(match data_type {
        T::Int8 => typed!(Int8Type),
        T::Int16 => typed!(Int16Type),
        T::Int32 => typed!(Int32Type),
        T::Int64 => typed!(Int64Type),
        T::UInt8 => typed!(UInt8Type),
        T::UInt16 => typed!(UInt16Type),
        T::UInt32 => typed!(UInt32Type),
        T::UInt64 => typed!(UInt64Type),
        T::Float16 => typed!(Float16Type),
        T::Float32 => typed!(Float32Type),
        T::Float64 => typed!(Float64Type),
        T::Date32 => typed!(Date32Type),
        T::Date64 => typed!(Date64Type),
        T::Time32(TimeUnit::Second) => typed!(Time32SecondType),
        T::Time32(TimeUnit::Millisecond) => typed!(Time32MillisecondType),
        T::Time64(TimeUnit::Microsecond) => typed!(Time64MicrosecondType),
        T::Time64(TimeUnit::Nanosecond) => typed!(Time64NanosecondType),
        T::Timestamp(TimeUnit::Second, tz) => timestamp!(TimestampSecondType, tz),
        T::Timestamp(TimeUnit::Millisecond, tz) => timestamp!(TimestampMillisecondType, tz),
        T::Timestamp(TimeUnit::Microsecond, tz) => timestamp!(TimestampMicrosecondType, tz),
        T::Timestamp(TimeUnit::Nanosecond, tz) => timestamp!(TimestampNanosecondType, tz),
        T::Duration(TimeUnit::Second) => typed!(DurationSecondType),
        T::Duration(TimeUnit::Millisecond) => typed!(DurationMillisecondType),
        T::Duration(TimeUnit::Microsecond) => typed!(DurationMicrosecondType),
        T::Duration(TimeUnit::Nanosecond) => typed!(DurationNanosecondType),
        T::Interval(IntervalUnit::YearMonth) => typed!(IntervalYearMonthType),
        T::Interval(IntervalUnit::DayTime) => typed!(IntervalDayTimeType),
        T::Interval(IntervalUnit::MonthDayNano) => typed!(IntervalMonthDayNanoType),
        T::Decimal32(p, s) => decimal!(Decimal32Type, p, s),
        T::Decimal64(p, s) => decimal!(Decimal64Type, p, s),
        T::Decimal128(p, s) => decimal!(Decimal128Type, p, s),
        T::Decimal256(p, s) => decimal!(Decimal256Type, p, s),
        T::FixedSizeBinary(width) => Arc::new(FixedSizeBinaryArray::try_new_with_len(
            *width, bytes, nulls, rows,
        )?),
        other => {
            return Err(Error::Unsupported(format!(
                "Arrow type {other} is not supported by the column layer"
            )));
        }
    })
}

/// A dictionary array: `keys` (`rows` keys of `key_type`, checked) into `values`;
/// `try_new` checks every valid key against the dictionary's length.
fn dictionary_array(
    key_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    keys: Buffer,
    values: ArrayRef,
) -> Result<ArrayRef> {
    use arrow::datatypes::*;
    fn typed<K: ArrowDictionaryKeyType>(
        rows: usize,
        nulls: Option<NullBuffer>,
        keys: Buffer,
        values: ArrayRef,
    ) -> Result<ArrayRef> {
        let keys = primitive::<K>(rows, nulls, keys)?;
        Ok(Arc::new(DictionaryArray::<K>::try_new(keys, values)?))
    }
    match key_type {
        DataType::Int8 => typed::<Int8Type>(rows, nulls, keys, values),
        DataType::Int16 => typed::<Int16Type>(rows, nulls, keys, values),
        DataType::Int32 => typed::<Int32Type>(rows, nulls, keys, values),
        DataType::Int64 => typed::<Int64Type>(rows, nulls, keys, values),
        DataType::UInt8 => typed::<UInt8Type>(rows, nulls, keys, values),
        DataType::UInt16 => typed::<UInt16Type>(rows, nulls, keys, values),
        DataType::UInt32 => typed::<UInt32Type>(rows, nulls, keys, values),
        DataType::UInt64 => typed::<UInt64Type>(rows, nulls, keys, values),
        other => Err(Error::format(format!(
            "{other} is not a dictionary key type"
        ))),
    }
}

/// Decodes the lengths part into `rows` lengths, checking their total against the data.
fn read_lengths(parts: &mut Parts, rows: usize) -> Result<(Vec<u64>, Buffer)> {
    let lengths = read_lengths_only(parts, rows)?;
    let data = parts.take(PartRole::Data)?;
    let total = lengths.iter().try_fold(0u64, |sum, &l| sum.checked_add(l));
    if total != Some(data.bytes.len() as u64) {
        return Err(Error::format(format!(
            "lengths do not add up to the {} data bytes",
            data.bytes.len()
        )));
    }
    Ok((lengths, data.bytes))
}

/// Decodes the lengths part into `rows` lengths (its size checked against `rows`).
pub(super) fn read_lengths_only(parts: &mut Parts, rows: usize) -> Result<Vec<u64>> {
    let lengths = parts.take(PartRole::Lengths)?;
    let width = lengths.width as usize;
    if ![1, 2, 4, 8].contains(&width) {
        return Err(Error::format(format!("lengths stored {width} bytes wide")));
    }
    expect_len("lengths", lengths.bytes.len(), rows.saturating_mul(width))?;
    let bytes = &lengths.bytes;
    Ok(match width {
        1 => bytes.iter().map(|&b| u64::from(b)).collect(),
        2 => values_of::<2, u64>(bytes, |b| u16::from_le_bytes(b).into()),
        4 => values_of::<4, u64>(bytes, |b| u32::from_le_bytes(b).into()),
        _ => values_of::<8, u64>(bytes, u64::from_le_bytes),
    })
}

/// The offsets rebuilt from the lengths part, and the data part (their total checked).
fn offsets_and_data<O: OffsetSizeTrait>(
    data_type: &DataType,
    rows: usize,
    parts: &mut Parts,
) -> Result<(OffsetBuffer<O>, Buffer)> {
    let (lengths, data) = read_lengths(parts, rows)?;
    let offsets = offsets_from_lengths::<O>(data_type, &lengths)?;
    // Non-negative and increasing by construction, which is all `new` asserts.
    Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), data))
}

/// Offsets `0, l0, l0 + l1, …` (one more than the lengths), each checked to fit `O`:
/// non-negative and increasing by construction.
pub(super) fn offsets_from_lengths<O: OffsetSizeTrait>(
    data_type: &DataType,
    lengths: &[u64],
) -> Result<Vec<O>> {
    let mut offsets = Vec::new();
    offsets.try_reserve_exact(lengths.len() + 1).map_err(|_| {
        Error::format(format!(
            "no memory for the offsets of {} rows",
            lengths.len()
        ))
    })?;
    let mut offset = 0u64;
    offsets.push(O::usize_as(0));
    for &length in lengths {
        let value = offset
            .checked_add(length)
            .and_then(|sum| {
                offset = sum;
                usize::try_from(sum).ok()
            })
            .and_then(O::from_usize)
            .ok_or_else(|| Error::format(format!("{data_type} offsets overflow")))?;
        offsets.push(value);
    }
    Ok(offsets)
}

/// A view array whose long values point into the decoded data part itself (no copy);
/// values of up to 12 bytes are inlined in their views, as Arrow lays them out.
fn view_array(
    data_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
) -> Result<ArrayRef> {
    let (lengths, data) = read_lengths(parts, rows)?;
    // A view's offset is 32 bits: data parts of 4 GiB or more (a whole large column, never
    // a table's block) go through the builder, which spreads them over several buffers.
    if u32::try_from(data.len()).is_err() {
        return view_array_by_builder(data_type, nulls, &lengths, &data);
    }
    let utf8 = *data_type == DataType::Utf8View;
    let text = if utf8 {
        std::str::from_utf8(&data).map_err(|_| Error::format("string data is not UTF-8"))?
    } else {
        ""
    };
    let mut views = Vec::with_capacity(rows);
    let mut start = 0usize;
    let mut long_values = false;
    for (i, &length) in lengths.iter().enumerate() {
        // The lengths add up to the data's size (read_lengths), so these fit.
        let end = start + length as usize;
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            views.push(0u128);
        } else {
            // The whole part is UTF-8, so a value is when both of its ends fall on
            // character boundaries.
            if utf8 && !(text.is_char_boundary(start) && text.is_char_boundary(end)) {
                return Err(Error::format("string data is not UTF-8"));
            }
            let value = &data[start..end];
            views.push(if length <= 12 {
                inline_view(value)
            } else {
                long_values = true;
                make_view(value, 0, start as u32)
            });
        }
        start = end;
    }
    let buffers = if long_values { vec![data] } else { Vec::new() };
    let views = ScalarBuffer::from(views);
    // SAFETY: every valid value's view was made from its slice of `data` (inlined, or
    // pointing into buffer 0 at the slice's offset), null views are empty, `nulls` has
    // `rows` bits (checked by `decode`) as `lengths` has `rows` values (`read_lengths`), and
    // for Utf8View every valid value is UTF-8 (checked above): all that `try_new` checks.
    Ok(if utf8 {
        Arc::new(unsafe { StringViewArray::new_unchecked(views, buffers, nulls) })
    } else {
        Arc::new(unsafe { BinaryViewArray::new_unchecked(views, buffers, nulls) })
    })
}

/// The view of a value of at most 12 bytes: its length, then the bytes themselves
/// (Arrow's layout; what `make_view` gives, without the call per value).
#[inline]
fn inline_view(value: &[u8]) -> u128 {
    let mut view = [0u8; 16];
    view[..4].copy_from_slice(&(value.len() as u32).to_le_bytes());
    view[4..4 + value.len()].copy_from_slice(value);
    u128::from_le_bytes(view)
}

/// [`view_array`] through Arrow's builder (copies the values, checks them).
fn view_array_by_builder(
    data_type: &DataType,
    nulls: Option<NullBuffer>,
    lengths: &[u64],
    data: &[u8],
) -> Result<ArrayRef> {
    let mut builder = BinaryViewBuilder::with_capacity(lengths.len());
    let mut start = 0usize;
    for (i, &length) in lengths.iter().enumerate() {
        let end = start + length as usize;
        if nulls.as_ref().is_none_or(|n| n.is_valid(i)) {
            builder.append_value(&data[start..end]);
        } else {
            builder.append_null();
        }
        start = end;
    }
    let binary = builder.finish();
    if *data_type == DataType::Utf8View {
        let strings = binary
            .to_string_view()
            .map_err(|_| Error::format("string data is not UTF-8"))?;
        Ok(Arc::new(strings))
    } else {
        Ok(Arc::new(binary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_has_the_bitmaps_of_its_own_rows() {
        // Sliced at a byte boundary, with the next rows' bits set in its last byte.
        let whole = BooleanArray::from_iter((0..24).map(|i| (i % 7 != 6).then_some(i % 3 != 1)));
        let slice = whole.slice(8, 7);
        assert_ne!(whole.values().inner().as_slice()[1] >> 7, 0);
        let fresh = BooleanArray::from_iter(slice.iter());
        let (a, b) = (encode(&slice).unwrap(), encode(&fresh).unwrap());
        assert_eq!(a.parts.len(), 2);
        for (a, b) in a.parts.iter().zip(&b.parts) {
            assert_eq!((a.role, a.bytes.as_slice()), (b.role, b.bytes.as_slice()));
        }
    }

    #[test]
    fn narrowing_round_trips_and_picks_the_smallest_width() {
        let values: Vec<i128> = vec![0, -1, 5000, -70000, i32::MAX as i128, i32::MIN as i128];
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (width, narrow_bytes) = narrow(&bytes, 16).unwrap();
        assert_eq!(width, 4);
        assert_eq!(widen(&narrow_bytes, 4, 16).as_slice(), bytes);
        let wide: Vec<i128> = vec![-3, 1 << 40, i64::MIN as i128, i64::MAX as i128];
        let wide_bytes: Vec<u8> = wide.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (width, narrow_bytes) = narrow(&wide_bytes, 16).unwrap();
        assert_eq!(width, 8);
        assert_eq!(widen(&narrow_bytes, 8, 16).as_slice(), wide_bytes);
        // Decimal256 from 8 and 16 bytes: the byte-wise path.
        let wide256: Vec<u8> = [-5i64, 7]
            .iter()
            .flat_map(|&v| {
                let fill = if v < 0 { 0xff } else { 0 };
                let mut b = v.to_le_bytes().to_vec();
                b.resize(32, fill);
                b
            })
            .collect();
        let (width, narrow_bytes) = narrow(&wide256, 32).unwrap();
        assert_eq!(width, 4);
        assert_eq!(widen(&narrow_bytes, 4, 32).as_slice(), wide256);
        let big: Vec<u8> = [1i128 << 40, -(1i128 << 70)]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert!(narrow(&big, 16).is_none());
    }

    #[test]
    fn view_arrays_round_trip_and_strings_must_be_utf8_value_by_value() {
        let long = "a value longer than twelve bytes, é included";
        let strings = StringViewArray::from(vec![Some("short"), None, Some(long), Some("")]);
        let node = encode(&strings).unwrap();
        let back = decode(&DataType::Utf8View, node).unwrap();
        assert_eq!(back.as_string_view(), &strings);
        let binary =
            BinaryViewArray::from(vec![Some(&b"\xff\x00"[..]), None, Some(long.as_bytes())]);
        let back = decode(&DataType::BinaryView, encode(&binary).unwrap()).unwrap();
        assert_eq!(back.as_binary_view(), &binary);
        // Bytes that are not UTF-8, and UTF-8 data cut inside a character ("é" is c3 a9).
        for values in [
            vec![&b"ok"[..], &b"\xff"[..]],
            vec![&b"\xc3"[..], &b"\xa9"[..]],
        ] {
            let node = encode(&BinaryViewArray::from(values)).unwrap();
            let err = decode(&DataType::Utf8View, node).unwrap_err();
            assert!(err.to_string().contains("not UTF-8"), "{err}");
        }
    }

    #[test]
    fn lengths_use_the_narrowest_width() {
        assert_eq!(lengths_part([3u64, 255].into_iter(), 2).width, 1);
        assert_eq!(lengths_part([256u64].into_iter(), 1).width, 2);
        assert_eq!(lengths_part([1u64 << 33].into_iter(), 1).width, 8);
    }
}
