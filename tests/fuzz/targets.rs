//! One target per decoder: its seeds, how an input is made from a seed (structure-aware
//! where the format has structure), and the oracle. Each target decodes inside
//! [`Meter::measure`] (which catches panics and measures memory) and judges outside it,
//! so reference decoders neither count against colzip's memory nor excuse its panics.

use std::io::Read;

use arrow::array::{Array, ArrayRef, RecordBatch};
use colzip::archive::{ArchiveReader, RawType, Source};
use colzip::codec::{bwt, gmatch, intpack, lzss};
use colzip::column::{self, CompressedColumn, CompressedNode};

use crate::alloc;
use crate::mutate::{Rng, mutate};
use crate::reference;
use crate::seeds;

/// Measures one decode: memory against a bound, and panics.
pub struct Meter {
    pub bound: usize,
    pub peak: usize,
    pub largest: usize,
}

impl Meter {
    /// Runs `f` with the allocator counting (and refusing single requests above the
    /// bound); a panic comes back as `Err` with its message.
    pub fn measure<T>(&mut self, f: impl FnOnce() -> T) -> Result<T, String> {
        let base = alloc::start(self.bound);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let (peak, largest) = alloc::finish(base);
        self.peak = self.peak.max(peak);
        self.largest = self.largest.max(largest);
        result.map_err(|payload| crate::panic_text(payload.as_ref()))
    }
}

/// One input made from a seed.
pub struct Case {
    pub bytes: Vec<u8>,
    /// The outer checksums were recomputed after the mutation (a forgery: the input is
    /// then a valid container or archive of other content, and must only be decoded
    /// safely, not necessarily to the original).
    pub forged: bool,
    /// The mutation made something every reader must refuse.
    pub must_refuse: bool,
}

impl Case {
    fn plain(bytes: Vec<u8>) -> Self {
        Case {
            bytes,
            forged: false,
            must_refuse: false,
        }
    }
}

/// What an input led to: decoded (and the oracle held), or refused with an error.
pub enum Verdict {
    Decoded,
    Refused,
}

pub trait Target: Sync {
    fn name(&self) -> &'static str;
    fn seeds(&self) -> usize;
    /// Seed `i` mutated.
    fn input(&self, rng: &mut Rng, i: usize) -> Case;
    /// The output limit given to the decoder for seed `i`.
    fn limit(&self, i: usize) -> usize;
    /// Decodes `input` (from seed `i`) and judges the result.
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String>;
}

/// Memory a decode may use: a multiple of its output limit and input, plus slack for
/// thread pools and tables.
pub fn bound(limit: usize, input: usize) -> usize {
    16 * limit + 16 * input + (8 << 20)
}

fn limit_for(original: usize) -> usize {
    (4 * original).max(64 << 10)
}

/// The inputs of the byte-stream targets: generic mutations of the seeds.
fn byte_input(seeds: &[Vec<u8>], rng: &mut Rng, i: usize) -> Vec<u8> {
    let mut data = seeds[i].clone();
    let others: Vec<&[u8]> = (0..3)
        .map(|_| seeds[rng.below(seeds.len())].as_slice())
        .collect();
    mutate(rng, &mut data, &others);
    data
}

fn describe<T, E: std::fmt::Debug>(r: &Result<T, E>) -> String {
    match r {
        Ok(_) => "Ok".into(),
        Err(e) => format!("Err({e:?})"),
    }
}

/// Judges a decode against a reference decoder's: both refuse, or both give the same
/// bytes (a refusal for exceeding the limit needs no agreement).
fn agree(
    ours: &Result<Vec<u8>, colzip::codec::CodecError>,
    reference: Option<Vec<u8>>,
) -> Result<Verdict, String> {
    match (ours, reference) {
        (Err(colzip::codec::CodecError::TooLarge { .. }), _) => Ok(Verdict::Refused),
        (Ok(a), Some(b)) if *a == b => Ok(Verdict::Decoded),
        (Err(_), None) => Ok(Verdict::Refused),
        (Ok(a), Some(b)) => Err(format!(
            "decoded {} bytes, the reference {} bytes, and they differ",
            a.len(),
            b.len()
        )),
        (Ok(a), None) => Err(format!(
            "decoded {} bytes where the reference refuses",
            a.len()
        )),
        (Err(e), Some(b)) => Err(format!(
            "refused ({e}) where the reference decodes {} bytes",
            b.len()
        )),
    }
}

// ---------------------------------------------------------------------------------
// lzss: differential against the reference decoder (no checksum in the stream)

pub struct Lzss {
    seeds: Vec<Vec<u8>>,
    originals: Vec<usize>,
}

impl Lzss {
    pub fn new() -> Self {
        let mut seeds = Vec::new();
        let mut originals = Vec::new();
        for sample in seeds::samples() {
            for (s, w, c) in [
                (1, 128, 2048),
                (2, 64, 4096),
                (4, 255, 2048),
                (8, 32, 16384),
            ] {
                let params = lzss::LzssParams::new(s, w, c).expect("params");
                seeds.push(lzss::compress(&sample, &params));
                originals.push(sample.len());
            }
        }
        Lzss { seeds, originals }
    }
}

impl Target for Lzss {
    fn name(&self) -> &'static str {
        "lzss"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        Case::plain(byte_input(&self.seeds, rng, i))
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(self.originals[i])
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let input = case.bytes.as_slice();
        let limit = self.limit(i);
        let ours = meter.measure(|| lzss::decompress_with_limit(input, limit))?;
        agree(&ours, reference::lzss(input, limit))
    }
}

// ---------------------------------------------------------------------------------
// intpack: no checksum and no second decoder, so the oracle is the stream's contract: a
// decode gives exactly the length asked for (or refuses), the unchanged seed gives its
// original, and decoded values re-encode to a stream that decodes to them again.

pub struct Intpack {
    seeds: Vec<Vec<u8>>,
    originals: Vec<Vec<u8>>,
    widths: Vec<u8>,
}

impl Intpack {
    pub fn new() -> Self {
        let mut samples = seeds::samples();
        // Every scheme: sorted keys in runs, prices with a few large ones (frame with
        // exceptions), a handful of far-apart values (dictionary), a rising walk (delta).
        samples.push(
            (0..3000u64)
                .flat_map(|i| (9_000 + i / 4).to_le_bytes())
                .collect(),
        );
        samples.push(
            (0..3000u64)
                .flat_map(|i| {
                    (1_000 + i * 7 % 900 + if i % 29 == 3 { 70_000 } else { 0 }).to_le_bytes()
                })
                .collect(),
        );
        samples.push(
            (0..2500u64)
                .flat_map(|i| [3u64, 1 << 40, 77, u64::MAX][(i * 5 % 4) as usize].to_le_bytes())
                .collect(),
        );
        samples.push(
            (0..2100u32)
                .flat_map(|i| (i * 3 + i % 5).to_le_bytes())
                .collect(),
        );
        let (mut seeds, mut originals, mut widths) = (Vec::new(), Vec::new(), Vec::new());
        for sample in samples {
            for width in [1u8, 2, 4, 8] {
                let params = intpack::IntpackParams::new(width).expect("width");
                seeds.push(intpack::compress(&sample, &params));
                originals.push(sample.clone());
                widths.push(width);
            }
        }
        Intpack {
            seeds,
            originals,
            widths,
        }
    }
}

impl Target for Intpack {
    fn name(&self) -> &'static str {
        "intpack"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        Case::plain(byte_input(&self.seeds, rng, i))
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(self.originals[i].len())
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let input = case.bytes.as_slice();
        let original = &self.originals[i];
        let out = match meter.measure(|| intpack::decompress(input, original.len()))? {
            Err(_) => return Ok(Verdict::Refused),
            Ok(out) => out,
        };
        if out.len() != original.len() {
            return Err(format!(
                "decoded {} bytes, {} asked for",
                out.len(),
                original.len()
            ));
        }
        if input == self.seeds[i].as_slice() && out != *original {
            return Err("the unchanged seed decoded to other bytes".into());
        }
        let params = intpack::IntpackParams::new(self.widths[i]).expect("width");
        let again = intpack::decompress(&intpack::compress(&out, &params), out.len());
        if !matches!(&again, Ok(back) if *back == out) {
            return Err("decoded values do not survive a re-encoding".into());
        }
        Ok(Verdict::Decoded)
    }
}

// ---------------------------------------------------------------------------------
// Snappy raw and framed streams: differential against the `snap` crate

fn snap_raw(input: &[u8]) -> Option<Vec<u8>> {
    snap::raw::Decoder::new().decompress_vec(input).ok()
}

fn snap_framed(input: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    snap::read::FrameDecoder::new(input)
        .read_to_end(&mut out)
        .ok()
        .map(|_| out)
}

/// Decodes a framed stream both ways colzip offers (in memory, and streamed to a sink),
/// which must agree.
fn framed_both(input: &[u8], limit: usize) -> Result<Vec<u8>, colzip::codec::CodecError> {
    let whole = gmatch::decompress_framed_with_limit(input, limit);
    let mut streamed = Vec::new();
    let total = gmatch::decompress_framed_to(input, limit, |bytes| {
        streamed.extend_from_slice(bytes);
        Ok::<(), colzip::codec::CodecError>(())
    });
    match (&whole, &total) {
        (Ok(a), Ok(n)) if *a == streamed && *n == a.len() as u64 => whole,
        (Err(_), Err(_)) => whole,
        _ => panic!(
            "decompress_framed_with_limit {} and decompress_framed_to {} disagree",
            describe(&whole),
            describe(&total)
        ),
    }
}

/// Seeds of one kind of Snappy stream.
pub struct Snappy {
    name: &'static str,
    /// (stream, framed, original length)
    seeds: Vec<(Vec<u8>, bool, usize)>,
}

impl Snappy {
    /// Streams written by colzip's gmatch (raw or framed).
    pub fn gmatch(framed: bool) -> Self {
        let seeds = seeds::samples()
            .into_iter()
            .map(|sample| {
                let stream = if framed {
                    gmatch::compress_framed(&sample)
                } else {
                    gmatch::compress_raw(&sample).expect("gmatch")
                };
                (stream, framed, sample.len())
            })
            .collect();
        Snappy {
            name: if framed {
                "gmatch-framed"
            } else {
                "gmatch-raw"
            },
            seeds,
        }
    }

    /// Streams of other writers: the `snap` crate (raw and framed) and hand-made ones
    /// with the elements gmatch never writes (copy-4, literal lengths in 2 to 4 bytes).
    pub fn other_writers() -> Self {
        let mut seeds = Vec::new();
        for sample in seeds::samples() {
            let raw = snap::raw::Encoder::new()
                .compress_vec(&sample)
                .expect("snap");
            seeds.push((raw, false, sample.len()));
            let mut framed = Vec::new();
            {
                let mut w = snap::write::FrameEncoder::new(&mut framed);
                std::io::Write::write_all(&mut w, &sample).expect("snap framed");
            }
            seeds.push((framed, true, sample.len()));
        }
        // "abcd" + copy-4 (offset 4, length 8) + literal of 70 bytes with a 2-byte length
        // (tag 61) + copy-4 (offset 1, length 64) + literal with a 4-byte length (tag 63).
        let mut hand = vec![0u8];
        hand.extend_from_slice(&[3 << 2, b'a', b'b', b'c', b'd']);
        hand.extend_from_slice(&[(7 << 2) | 3, 4, 0, 0, 0]);
        hand.push(61 << 2);
        hand.extend_from_slice(&69u16.to_le_bytes());
        hand.extend(seeds::bytes(70, 5));
        hand.extend_from_slice(&[(63 << 2) | 3, 1, 0, 0, 0]);
        hand.push(63 << 2);
        hand.extend_from_slice(&2u32.to_le_bytes());
        hand.extend_from_slice(b"xyz");
        let len = 4 + 8 + 70 + 64 + 3;
        hand[0] = len as u8 | 0x80;
        hand.insert(1, (len >> 7) as u8);
        seeds.push((hand, false, len));
        Snappy {
            name: "snappy",
            seeds,
        }
    }
}

impl Target for Snappy {
    fn name(&self) -> &'static str {
        self.name
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        let streams: Vec<Vec<u8>> = self.seeds.iter().map(|s| s.0.clone()).collect();
        Case::plain(byte_input(&streams, rng, i))
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(self.seeds[i].2)
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let input = case.bytes.as_slice();
        let limit = self.limit(i);
        if self.seeds[i].1 {
            let ours = meter.measure(|| framed_both(input, limit))?;
            agree(&ours, snap_framed(input))
        } else {
            let ours = meter.measure(|| gmatch::decompress_raw_with_limit(input, limit))?;
            agree(&ours, snap_raw(input))
        }
    }
}

// ---------------------------------------------------------------------------------
// bwt: every block carries a CRC-32C, so any Ok must be the original

pub struct Bwt {
    seeds: Vec<Vec<u8>>,
    originals: Vec<Vec<u8>>,
}

impl Bwt {
    pub fn new() -> Self {
        let params = bwt::BwtParams::new(bwt::MIN_BLOCK_SIZE).expect("params");
        let mut originals = seeds::samples();
        // Three blocks, repetitive enough to stay a small seed.
        originals.push(b"several blocks, ".repeat(9000));
        let seeds = originals
            .iter()
            .map(|o| bwt::compress(o, &params))
            .collect();
        Bwt { seeds, originals }
    }
}

impl Target for Bwt {
    fn name(&self) -> &'static str {
        "bwt"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        Case::plain(byte_input(&self.seeds, rng, i))
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(self.originals[i].len())
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let input = case.bytes.as_slice();
        let limit = self.limit(i);
        let original = &self.originals[i];
        match meter.measure(|| bwt::decompress_with_limit(input, limit))? {
            Ok(out) if out == *original => Ok(Verdict::Decoded),
            // Blocks carry CRCs, the header does not: a mutation that rewrote the header
            // into a valid stream of fewer blocks (of none, say) decodes to those blocks,
            // and a splice may make another seed's stream whole.
            Ok(out)
                if (out.len() % bwt::MIN_BLOCK_SIZE as usize == 0
                    && original.starts_with(&out))
                    || self.originals.contains(&out) =>
            {
                Ok(Verdict::Decoded)
            }
            Ok(out) => Err(format!(
                "decoded {} bytes that are not the original {}",
                out.len(),
                self.originals[i].len()
            )),
            Err(_) => Ok(Verdict::Refused),
        }
    }
}

// ---------------------------------------------------------------------------------
// column containers: a CRC over the container, an xxh3 over every decoded part

pub struct Container {
    seeds: Vec<Vec<u8>>,
    columns: Vec<CompressedColumn>,
    arrays: Vec<ArrayRef>,
}

impl Container {
    pub fn new() -> Self {
        let arrays = seeds::arrays();
        let seeds = seeds::containers(&arrays);
        let columns = seeds
            .iter()
            .map(|s| CompressedColumn::from_bytes(s).expect("seed container"))
            .collect();
        let arrays = arrays
            .iter()
            .flat_map(|a| std::iter::repeat_n(a.clone(), seeds::CODECS.len()))
            .collect();
        Container {
            seeds,
            columns,
            arrays,
        }
    }
}

/// What a container declares of its content, without the codec streams: a forged
/// container declaring exactly this must decode to the same array.
/// Per node: rows, null count, and per part role, width, raw length and xxh3.
type Declaration = Vec<(usize, usize, Vec<(u8, u32, usize, u64)>)>;

fn declared(node: &CompressedNode) -> Declaration {
    let mut out = vec![(
        node.rows,
        node.null_count,
        node.parts
            .iter()
            .map(|p| (p.role as u8, p.width, p.raw_len, p.checksum))
            .collect(),
    )];
    for child in &node.children {
        out.extend(declared(child));
    }
    out
}

/// Where `needle` (a part's stream, not empty) first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Recomputes a container's trailing CRC-32C (a forgery that reaches the parsers).
fn fix_container_crc(bytes: &mut [u8]) {
    if bytes.len() >= 4 {
        let body = bytes.len() - 4;
        let crc = crc32c::crc32c(&bytes[..body]);
        bytes[body..].copy_from_slice(&crc.to_le_bytes());
    }
}

fn valid(array: &dyn Array) -> Result<(), String> {
    array
        .to_data()
        .validate_full()
        .map_err(|e| format!("decoded an invalid array: {e}"))
}

impl Target for Container {
    fn name(&self) -> &'static str {
        "container"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        let seed = &self.seeds[i];
        let parts = self.columns[i].root().all_parts();
        if !parts.is_empty() && rng.chance(3) {
            // Inside one part's codec stream only, its length kept and the CRC recomputed:
            // the container parses, the codec decodes, the part's xxh3 must catch the rest.
            let part = parts[rng.below(parts.len())];
            if let Some(at) = find(seed, &part.bytes) {
                let mut stream = part.bytes.to_vec();
                mutate(rng, &mut stream, &[]);
                stream.resize(part.bytes.len(), 0);
                let mut bytes = seed.clone();
                bytes[at..at + stream.len()].copy_from_slice(&stream);
                fix_container_crc(&mut bytes);
                return Case {
                    bytes,
                    forged: true,
                    must_refuse: false,
                };
            }
        }
        let mut bytes = byte_input(&self.seeds, rng, i);
        let forged = rng.chance(2);
        if forged {
            fix_container_crc(&mut bytes);
        }
        Case {
            bytes,
            forged,
            must_refuse: false,
        }
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(self.columns[i].plain_bytes())
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let (input, forged) = (case.bytes.as_slice(), case.forged);
        let limit = self.limit(i);
        let decoded = meter.measure(|| {
            let column = CompressedColumn::from_bytes(input)?;
            if column.plain_bytes() > limit {
                return Ok(None);
            }
            let array = column::decompress(&column)?;
            Ok::<_, colzip::Error>(Some((column, array)))
        })?;
        let (column, array) = match decoded {
            Ok(Some(decoded)) => decoded,
            Ok(None) | Err(_) => return Ok(Verdict::Refused),
        };
        valid(array.as_ref())?;
        if array.as_ref() == self.arrays[i].as_ref() {
            return Ok(Verdict::Decoded);
        }
        let original = &self.columns[i];
        if forged
            && (column.field() != original.field()
                || declared(column.root()) != declared(original.root()))
        {
            // A valid container of other content: decoding it safely is all we ask.
            return Ok(Verdict::Decoded);
        }
        Err(format!(
            "decoded a different {} array of {} rows{}",
            array.data_type(),
            array.len(),
            if forged {
                " from the same declaration"
            } else {
                " past the CRC"
            }
        ))
    }
}

// ---------------------------------------------------------------------------------
// archives: CRC-32C chained over every byte; structure-aware mutations

/// A valid archive cut into its records (each with the CRC it was written with).
#[derive(Clone)]
struct Model {
    header: (Vec<u8>, [u8; 4]),
    records: Vec<(Record, [u8; 4])>,
}

#[derive(Clone)]
enum Record {
    Batch {
        rows: Vec<u8>,
        containers: Vec<Vec<u8>>,
    },
    End {
        flags: u8,
        count: Vec<u8>,
    },
}

fn take_varint(bytes: &[u8], pos: &mut usize) -> Vec<u8> {
    let start = *pos;
    while bytes[*pos] & 0x80 != 0 {
        *pos += 1;
    }
    *pos += 1;
    bytes[start..*pos].to_vec()
}

fn varint_value(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .enumerate()
        .fold(0, |v, (i, b)| v | (usize::from(b & 0x7f) << (7 * i)))
}

fn crc_at(bytes: &[u8], pos: &mut usize) -> [u8; 4] {
    let crc = bytes[*pos..*pos + 4].try_into().expect("4 bytes");
    *pos += 4;
    crc
}

impl Model {
    /// Parses a valid archive of `fields` columns.
    fn parse(bytes: &[u8], fields: usize) -> Self {
        let mut pos = 7;
        let len = varint_value(&take_varint(bytes, &mut pos));
        pos += len;
        let header = (bytes[..pos].to_vec(), crc_at(bytes, &mut pos));
        let mut records = Vec::new();
        loop {
            let marker = bytes[pos];
            pos += 1;
            if marker == 0 {
                let flags = bytes[pos];
                pos += 1;
                let count = take_varint(bytes, &mut pos);
                let crc = crc_at(bytes, &mut pos);
                records.push((Record::End { flags, count }, crc));
                assert_eq!(pos, bytes.len(), "seed archive parsed");
                return Model { header, records };
            }
            let rows = take_varint(bytes, &mut pos);
            let containers = (0..fields)
                .map(|_| {
                    let len = varint_value(&take_varint(bytes, &mut pos));
                    pos += len;
                    bytes[pos - len..pos].to_vec()
                })
                .collect();
            let crc = crc_at(bytes, &mut pos);
            records.push((Record::Batch { rows, containers }, crc));
        }
    }

    /// The archive's bytes, with every CRC recomputed (`fix`) or as recorded.
    fn bytes(&self, fix: bool) -> Vec<u8> {
        let mut out = self.header.0.clone();
        // The running CRC of every byte but the CRC fields, the archive's and each
        // container's own last 4 bytes (FORMAT.md, archive).
        let mut running = crc32c::crc32c(&out);
        let mut hashed = out.len();
        let mut close = |out: &mut Vec<u8>, crc: Option<&[u8; 4]>, skip: usize| {
            let end = out.len().saturating_sub(skip).max(hashed);
            running = crc32c::crc32c_append(running, &out[hashed..end]);
            match crc {
                Some(_) if fix => out.extend_from_slice(&running.to_le_bytes()),
                Some(crc) => out.extend_from_slice(crc),
                None => {}
            }
            hashed = out.len();
        };
        close(&mut out, Some(&self.header.1), 0);
        for (record, crc) in &self.records {
            match record {
                Record::Batch { rows, containers } => {
                    out.push(1);
                    out.extend_from_slice(rows);
                    for c in containers {
                        let mut len = Vec::new();
                        colzip::codec::varint::write_u64(&mut len, c.len() as u64);
                        out.extend_from_slice(&len);
                        out.extend_from_slice(c);
                        close(&mut out, None, c.len().min(4));
                    }
                }
                Record::End { flags, count } => {
                    out.push(0);
                    out.push(*flags);
                    out.extend_from_slice(count);
                }
            }
            close(&mut out, Some(crc), 0);
        }
        out
    }
}

pub struct Archives {
    seeds: Vec<seeds::Archive>,
    models: Vec<Model>,
}

impl Archives {
    pub fn new() -> Self {
        let seeds = seeds::archives();
        let models = seeds
            .iter()
            .map(|a| {
                let fields = match a.source {
                    Source::Raw(_) => 1,
                    _ => 3,
                };
                let model = Model::parse(&a.bytes, fields);
                assert_eq!(model.bytes(false), a.bytes, "seed archive round trip");
                assert_eq!(model.bytes(true), a.bytes, "seed archive CRCs");
                model
            })
            .collect();
        Archives { seeds, models }
    }

    /// A structural change to `model`; `true` if it set end-record flags that mean
    /// nothing for the archive's source (which must then be refused).
    fn restructure(&self, rng: &mut Rng, model: &mut Model) -> bool {
        let n = model.records.len();
        match rng.below(8) {
            0 if n > 2 => {
                let (a, b) = (rng.below(n), rng.below(n));
                model.records.swap(a, b);
            }
            1 if n > 1 => {
                model.records.remove(rng.below(n - 1));
            }
            2 => {
                let r = model.records[rng.below(n)].clone();
                model.records.insert(rng.below(n), r);
            }
            3 => {
                // A record (often the end record) from another archive.
                let other = &self.models[rng.below(self.models.len())];
                let r = other.records[rng.below(other.records.len())].clone();
                let at = rng.below(n);
                model.records[at] = r;
            }
            4 => {
                let flags = 1u8 << rng.below(8);
                if let Some((Record::End { flags: f, .. }, _)) = model.records.last_mut() {
                    *f ^= flags;
                    let utf8 =
                        model.header.0[5] == 0 && model.header.0[6] == RawType::Utf8Lines.tag();
                    return *f & !u8::from(utf8) != 0;
                }
            }
            5 => {
                // The source kind or the raw type.
                let at = 5 + rng.below(2);
                model.header.0[at] = rng.below(13) as u8;
            }
            6 => {
                // A container's bytes, its own CRC recomputed.
                let batches: Vec<usize> = (0..n)
                    .filter(|&k| matches!(model.records[k].0, Record::Batch { .. }))
                    .collect();
                if !batches.is_empty() {
                    let k = batches[rng.below(batches.len())];
                    if let Record::Batch { containers, .. } = &mut model.records[k].0 {
                        let c = rng.below(containers.len());
                        let mut bytes = containers[c].clone();
                        mutate(rng, &mut bytes, &[]);
                        fix_container_crc(&mut bytes);
                        containers[c] = bytes;
                    }
                }
            }
            _ => {
                let k = rng.below(n);
                match &mut model.records[k].0 {
                    Record::Batch { rows, .. } => {
                        let mut v = Vec::new();
                        colzip::codec::varint::write_u64(&mut v, rng.next() % 100_000);
                        *rows = v;
                    }
                    Record::End { count, .. } => *count = vec![rng.below(5) as u8],
                }
            }
        }
        false
    }
}

/// An archive's decoded content.
type Decoded = (Source, Vec<RecordBatch>, bool);

fn read_archive(input: &[u8], limit: usize) -> colzip::Result<Decoded> {
    let mut reader = ArchiveReader::new(input)?.with_max_output(limit as u64);
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

impl Target for Archives {
    fn name(&self) -> &'static str {
        "archive"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        match rng.below(3) {
            // Bytes changed, CRCs as written: must be refused (or decode to the original).
            0 => {
                let seeds: Vec<Vec<u8>> = self.seeds.iter().map(|s| s.bytes.clone()).collect();
                Case::plain(byte_input(&seeds, rng, i))
            }
            // Records moved, dropped, repeated or swapped in from other archives, each
            // with its CRC as written: order and binding must be caught.
            1 => {
                let mut model = self.models[i].clone();
                self.restructure(rng, &mut model);
                Case::plain(model.bytes(false))
            }
            // The same with every CRC recomputed: reaches the parsers behind the CRCs.
            _ => {
                let mut model = self.models[i].clone();
                let must_refuse = self.restructure(rng, &mut model);
                Case {
                    bytes: model.bytes(true),
                    forged: true,
                    must_refuse,
                }
            }
        }
    }
    fn limit(&self, i: usize) -> usize {
        let plain: usize = self.seeds[i]
            .batches
            .iter()
            .map(|b| b.get_array_memory_size())
            .sum();
        limit_for(plain)
    }
    fn run(&self, case: &Case, i: usize, meter: &mut Meter) -> Result<Verdict, String> {
        let limit = self.limit(i);
        let input = case.bytes.as_slice();
        let decoded = match meter.measure(|| read_archive(input, limit))? {
            Ok(decoded) => decoded,
            Err(_) => return Ok(Verdict::Refused),
        };
        for batch in &decoded.1 {
            for column in batch.columns() {
                valid(column.as_ref())?;
            }
        }
        let seed = &self.seeds[i];
        if (decoded.0, &decoded.1, decoded.2) == (seed.source, &seed.batches, seed.trailing_newline)
        {
            return Ok(Verdict::Decoded);
        }
        if case.must_refuse {
            return Err("accepted end-record flags that mean nothing for its source".into());
        }
        if case.forged {
            return Ok(Verdict::Decoded);
        }
        Err(format!(
            "decoded {} ({} batches, trailing newline {}) instead of the original {} ({} batches, {})",
            decoded.0.name(),
            decoded.1.len(),
            decoded.2,
            seed.source.name(),
            seed.batches.len(),
            seed.trailing_newline
        ))
    }
}

// ---------------------------------------------------------------------------------
// Parquet pages: colzip's reader (its own page decompression) against the parquet crate's

#[cfg(feature = "parquet")]
pub struct Parquet {
    seeds: Vec<(Vec<u8>, Vec<RecordBatch>)>,
}

#[cfg(feature = "parquet")]
impl Parquet {
    pub fn new() -> Self {
        Parquet {
            seeds: seeds::parquet_files(),
        }
    }

    /// Where the pages are: after the magic, before the footer.
    fn pages(file: &[u8]) -> std::ops::Range<usize> {
        let footer = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap());
        4..file.len() - 8 - footer as usize
    }
}

#[cfg(feature = "parquet")]
fn read_reference(input: &[u8]) -> Option<Vec<RecordBatch>> {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    // The parquet crate may panic on corrupt files: that is no finding about colzip.
    std::panic::catch_unwind(|| {
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(input))
            .ok()?
            .with_batch_size(8192)
            .build()
            .ok()?;
        reader.collect::<Result<Vec<_>, _>>().ok()
    })
    .ok()
    .flatten()
}

/// The rows of `batches` as one batch, without schema metadata: the parquet crate's
/// batches carry none, colzip's the file's (which a mutated key may leave in place).
#[cfg(feature = "parquet")]
fn concat(batches: &[RecordBatch]) -> Option<RecordBatch> {
    let first = batches.first()?;
    let schema = std::sync::Arc::new(arrow::datatypes::Schema::new(
        first.schema().fields().clone(),
    ));
    let batches: Vec<RecordBatch> = batches
        .iter()
        .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()).ok())
        .collect::<Option<_>>()?;
    arrow::compute::concat_batches(&schema, &batches).ok()
}

#[cfg(feature = "parquet")]
impl Target for Parquet {
    fn name(&self) -> &'static str {
        "parquet"
    }
    fn seeds(&self) -> usize {
        self.seeds.len()
    }
    fn input(&self, rng: &mut Rng, i: usize) -> Case {
        let file = &self.seeds[i].0;
        if rng.chance(5) {
            let files: Vec<Vec<u8>> = self.seeds.iter().map(|s| s.0.clone()).collect();
            return Case::plain(byte_input(&files, rng, i));
        }
        // The pages only, their length kept so the footer still locates them.
        let pages = Self::pages(file);
        let mut region = file[pages.clone()].to_vec();
        mutate(rng, &mut region, &[]);
        region.resize(pages.len(), 0);
        let mut out = file.clone();
        out[pages].copy_from_slice(&region);
        Case::plain(out)
    }
    fn limit(&self, i: usize) -> usize {
        limit_for(
            self.seeds[i]
                .1
                .iter()
                .map(|b| b.get_array_memory_size())
                .sum(),
        )
    }
    fn run(&self, case: &Case, _: usize, meter: &mut Meter) -> Result<Verdict, String> {
        use colzip::codec::Placement;
        let input = case.bytes.as_slice();
        use colzip::parquet::read::{ReadOptions, read_batches};
        let options = ReadOptions::default().with_placement(Placement::CPU);
        let ours =
            meter.measure(|| read_batches(bytes::Bytes::copy_from_slice(input), &options))?;
        let Ok(ours) = ours else {
            return Ok(Verdict::Refused);
        };
        for batch in &ours.batches {
            for column in batch.columns() {
                valid(column.as_ref())?;
            }
        }
        if let Some(reference) = read_reference(input)
            && concat(&reference) != concat(&ours.batches)
        {
            return Err("colzip and the parquet crate read different batches".into());
        }
        Ok(Verdict::Decoded)
    }
}
