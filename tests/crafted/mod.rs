//! Hand-made hostile inputs, byte by byte after `docs/FORMAT.md`: containers and
//! archives whose checksums are valid but whose claims are not, and codec streams whose
//! headers claim far more than their bytes hold.
#![allow(dead_code)]

use colzip::codec::varint::write_u64 as varint;

/// Data type tags of the container (FORMAT.md, "Data type encoding").
pub const UINT8: &[u8] = &[6];
pub const INT32: &[u8] = &[4];

/// One part: role, width, codec id, raw length, the stream, and the xxh3 to store.
pub struct Part<'a> {
    pub role: u8,
    pub width: u64,
    pub codec: u8,
    pub raw_len: u64,
    pub stream: &'a [u8],
    pub xxh3: u64,
}

/// A column container (valid CRC) of a field `name` of `data_type` with one node.
pub fn container(
    name: &str,
    nullable: bool,
    data_type: &[u8],
    rows: u64,
    parts: &[Part],
) -> Vec<u8> {
    let mut out = b"CZCL".to_vec();
    out.push(colzip::column::VERSION);
    varint(&mut out, name.len() as u64);
    out.extend_from_slice(name.as_bytes());
    out.push(u8::from(nullable));
    varint(&mut out, 0);
    out.extend_from_slice(data_type);
    varint(&mut out, rows);
    varint(&mut out, 0);
    out.push(parts.len() as u8);
    for p in parts {
        out.push(p.role);
        varint(&mut out, p.width);
        out.push(p.codec);
        varint(&mut out, p.raw_len);
        varint(&mut out, p.stream.len() as u64);
        out.extend_from_slice(&p.xxh3.to_le_bytes());
        out.extend_from_slice(p.stream);
    }
    out.push(0);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Appends the archive CRC after `out`: the CRC-32C of everything in it but the CRCs
/// already appended (whose positions `crcs` records).
fn close(out: &mut Vec<u8>, crcs: &mut Vec<usize>) {
    let mut crc = 0;
    let mut from = 0;
    for &at in crcs.iter() {
        crc = crc32c::crc32c_append(crc, &out[from..at]);
        from = at + 4;
    }
    crc = crc32c::crc32c_append(crc, &out[from..]);
    crcs.push(out.len());
    out.extend_from_slice(&crc.to_le_bytes());
}

/// A version-2 archive with valid CRCs: `source`/`raw` bytes, one field given in
/// container encoding, batches of (rows, container), and the end record's flags.
pub fn archive(
    source: u8,
    raw: u8,
    field: &[u8],
    batches: &[(u64, Vec<u8>)],
    flags: u8,
) -> Vec<u8> {
    let mut out = b"CZIP".to_vec();
    out.extend_from_slice(&[2, source, raw]);
    let mut schema = Vec::new();
    varint(&mut schema, 1);
    schema.extend_from_slice(field);
    varint(&mut out, schema.len() as u64);
    out.extend_from_slice(&schema);
    let mut crcs = Vec::new();
    close(&mut out, &mut crcs);
    for (rows, container) in batches {
        out.push(1);
        varint(&mut out, *rows);
        varint(&mut out, container.len() as u64);
        out.extend_from_slice(container);
        close(&mut out, &mut crcs);
    }
    out.push(0);
    out.push(flags);
    varint(&mut out, batches.len() as u64);
    close(&mut out, &mut crcs);
    out
}

/// The field of a raw `bytes` archive in container encoding: "value", not null, UInt8.
pub fn raw_bytes_field() -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, 5);
    out.extend_from_slice(b"value");
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(UINT8);
    out
}

/// A bwt stream whose directory claims `blocks` blocks of 64 MiB behind 8 payload bytes
/// each (the smallest the directory allows with one sampled BWT index per block):
/// 14 bytes of stream per 64 MiB of claim.
pub fn bwt_directory_bomb(blocks: u64) -> (Vec<u8>, u64) {
    let block = 64u64 << 20;
    let length = blocks * block;
    let mut out = b"CZBW".to_vec();
    out.push(1);
    varint(&mut out, block);
    varint(&mut out, length);
    out.extend_from_slice(&[8, 11, 30]);
    for _ in 0..blocks {
        out.push(1);
        varint(&mut out, 8);
        out.extend_from_slice(&[0; 4]);
    }
    for _ in 0..blocks {
        // aux 1, total_bits 1, then zeros: a payload the decoder must refuse.
        out.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 0]);
    }
    (out, length)
}

/// A raw `bytes` archive of one batch whose only column is one part holding
/// [`bwt_directory_bomb`]`(blocks)`, every checksum valid; returns it with the claim.
#[allow(dead_code)]
pub fn bwt_bomb_archive(blocks: u64) -> (Vec<u8>, u64) {
    let (stream, claim) = bwt_directory_bomb(blocks);
    let column = container(
        "value",
        false,
        UINT8,
        claim,
        &[Part {
            role: 2,
            width: 1,
            codec: 4,
            raw_len: claim,
            stream: &stream,
            xxh3: 0,
        }],
    );
    (
        archive(0, 0, &raw_bytes_field(), &[(claim, column)], 0),
        claim,
    )
}

/// An lzss stream (S=8, C=16384) claiming `chunks` full chunks, each with a payload of
/// `payload` bytes of zeros.
pub fn lzss_bomb(chunks: u64, payload: u16) -> (Vec<u8>, u64) {
    let length = chunks * 16384;
    let mut out = vec![1, 8, 255];
    out.extend_from_slice(&16384u16.to_le_bytes());
    varint(&mut out, length);
    for _ in 0..chunks {
        out.extend_from_slice(&payload.to_le_bytes());
    }
    out.resize(out.len() + chunks as usize * usize::from(payload), 0);
    (out, length)
}

/// Recomputes an archive's CRCs, at `crcs`, after a change: each is the CRC-32C of every
/// byte before it but the CRC fields, its own and the column containers' (whose CRCs,
/// at `container_crcs`, are left as they are).
pub fn rechain(bytes: &mut [u8], crcs: &[usize], container_crcs: &[usize]) {
    let mut fields: Vec<(usize, bool)> = crcs.iter().map(|&at| (at, true)).collect();
    fields.extend(container_crcs.iter().map(|&at| (at, false)));
    fields.sort();
    let mut crc = 0;
    let mut from = 0;
    for (at, rewrite) in fields {
        crc = crc32c::crc32c_append(crc, &bytes[from..at]);
        if rewrite {
            bytes[at..at + 4].copy_from_slice(&crc.to_le_bytes());
        }
        from = at + 4;
    }
}
