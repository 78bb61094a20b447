//! Step 3: encoding a chunk; local prefix sums give every token's write position.

use super::*;
// Step 3: encoding a chunk (local prefix sums give every token's write position).

/// Encodes a parsed chunk: `T | flags | literals | lengths | distances`, or a copy of the
/// chunk when that is not strictly smaller. Appends to `out`, returns the bytes appended.
pub fn encode_tokens(chunk: &[u8], symbol_width: u8, tokens: &[Token], out: &mut Vec<u8>) -> usize {
    let s = usize::from(symbol_width);
    let min = min_match_len(symbol_width);
    let mut enc = ChunkEncoder::new(chunk.len(), chunk.len() / s);
    for token in tokens {
        match *token {
            Token::Literal { pos } => {
                let p = pos as usize * s;
                enc.literal(&chunk[p..p + s]);
            }
            Token::Match { m, .. } => enc.push_match(usize::from(m.len) - min, m.dist),
        }
    }
    enc.finish(chunk, out)
}

/// Collects a chunk's sections while the parse runs, in buffers sized for a whole chunk.
pub(super) struct ChunkEncoder {
    tokens: usize,
    literal_bytes: usize,
    matches: usize,
    flags: Vec<u8>,
    literals: Vec<u8>,
    lengths: Vec<u8>,
    dists: Vec<u8>,
}

impl ChunkEncoder {
    /// Scratch for chunks of at most `max_bytes` bytes and `max_symbols` symbols.
    pub(super) fn new(max_bytes: usize, max_symbols: usize) -> Self {
        ChunkEncoder {
            tokens: 0,
            literal_bytes: 0,
            matches: 0,
            flags: vec![0; max_symbols.div_ceil(8)],
            literals: vec![0; max_bytes],
            lengths: vec![0; max_symbols],
            dists: vec![0; max_symbols],
        }
    }

    pub(super) fn clear(&mut self) {
        self.flags[..self.tokens.div_ceil(8)].fill(0);
        self.tokens = 0;
        self.literal_bytes = 0;
        self.matches = 0;
    }

    #[inline(always)]
    pub(super) fn literal(&mut self, symbol: &[u8]) {
        let at = self.literal_bytes;
        self.literals[at..at + symbol.len()].copy_from_slice(symbol);
        self.literal_bytes = at + symbol.len();
        self.tokens += 1;
    }

    #[inline(always)]
    pub(super) fn push_match(&mut self, biased_len: usize, dist: u8) {
        let t = self.tokens;
        self.flags[t >> 3] |= 1 << (t & 7);
        self.lengths[self.matches] = biased_len as u8;
        self.dists[self.matches] = dist;
        self.matches += 1;
        self.tokens = t + 1;
    }

    /// Encoded size so far; it only grows as tokens are added.
    #[inline(always)]
    pub(super) fn size(&self) -> usize {
        TOKEN_COUNT_LEN + self.tokens.div_ceil(8) + self.literal_bytes + 2 * self.matches
    }

    pub(super) fn finish(&self, chunk: &[u8], out: &mut Vec<u8>) -> usize {
        let at = out.len();
        out.resize(at + chunk.len(), 0);
        let size = self.finish_into(chunk, &mut out[at..]);
        out.truncate(at + size);
        size
    }

    /// [`ChunkEncoder::finish`] into `out[..chunk.len()]`, which has room for the chunk
    /// stored raw (an encoding is never longer).
    pub(super) fn finish_into(&self, chunk: &[u8], out: &mut [u8]) -> usize {
        let size = self.size();
        if size >= chunk.len() {
            out[..chunk.len()].copy_from_slice(chunk);
            return chunk.len();
        }
        let flag_len = self.tokens.div_ceil(8);
        let (count, rest) = out.split_at_mut(TOKEN_COUNT_LEN);
        count.copy_from_slice(&(self.tokens as u16).to_le_bytes());
        let (flags, rest) = rest.split_at_mut(flag_len);
        flags.copy_from_slice(&self.flags[..flag_len]);
        let (literals, rest) = rest.split_at_mut(self.literal_bytes);
        literals.copy_from_slice(&self.literals[..self.literal_bytes]);
        let (lengths, rest) = rest.split_at_mut(self.matches);
        lengths.copy_from_slice(&self.lengths[..self.matches]);
        rest[..self.matches].copy_from_slice(&self.dists[..self.matches]);
        size
    }
}

/// Per-thread scratch of the compressor, sized for any chunk.
pub(super) struct ChunkCompressor {
    finder: MatchFinder,
    enc: ChunkEncoder,
}

thread_local! {
    /// Each thread's compressor scratch, kept between chunks and calls: building it
    /// (clearing the hash table) costs about as much as compressing a small chunk.
    static SCRATCH: std::cell::RefCell<Option<Box<ChunkCompressor>>> =
        const { std::cell::RefCell::new(None) };
}

impl ChunkCompressor {
    /// Scratch for chunks of at most `max_bytes` bytes of `symbol_width`-byte symbols.
    pub(super) fn new(max_bytes: usize, symbol_width: usize) -> Self {
        let max_symbols = max_bytes / symbol_width;
        ChunkCompressor {
            finder: MatchFinder::new(max_symbols),
            enc: ChunkEncoder::new(max_bytes, max_symbols),
        }
    }

    /// Runs `f` with this thread's scratch (sized for the largest chunk of 1-byte symbols),
    /// or with a fresh one if the thread's is in use.
    pub(super) fn with<R>(f: impl FnOnce(&mut ChunkCompressor) -> R) -> R {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => {
                let cc = slot.get_or_insert_with(|| {
                    Box::new(ChunkCompressor::new(MAX_CHUNK_SIZE as usize, 1))
                });
                f(cc)
            }
            Err(_) => f(&mut ChunkCompressor::new(MAX_CHUNK_SIZE as usize, 1)),
        })
    }

    /// Steps 1 to 3 for one chunk, fused: the parse asks for matches only where a token
    /// starts, and gives up (storing the chunk raw) once the encoding cannot be smaller.
    /// Writes the payload to the front of `out` (room for `chunk.len()` bytes) and returns
    /// its size.
    pub(super) fn compress<const S: usize>(
        &mut self,
        chunk: &[u8],
        window: usize,
        out: &mut [u8],
    ) -> usize {
        let m = chunk.len() / S;
        let bias = min_match_len(S as u8);
        self.finder.index::<S>(chunk);
        self.enc.clear();
        let mut i = 0;
        while i < m {
            match self.finder.find::<S>(chunk, window, i) {
                Some(mt) => {
                    self.enc.push_match(usize::from(mt.len) - bias, mt.dist);
                    i += usize::from(mt.len);
                }
                None => {
                    self.enc.literal(&chunk[i * S..i * S + S]);
                    i += 1;
                    if self.enc.size() >= chunk.len() {
                        out[..chunk.len()].copy_from_slice(chunk);
                        return chunk.len();
                    }
                }
            }
        }
        self.enc.finish_into(chunk, out)
    }
}

/// Compresses one chunk as [`compress`] does (the chunk must be a whole number of
/// symbols, at most `params.chunk_size` bytes); appends the payload to `out` and returns
/// its size, which equals `chunk.len()` when the chunk is stored raw.
pub fn compress_chunk(chunk: &[u8], params: &LzssParams, out: &mut Vec<u8>) -> Result<usize> {
    params.validate()?;
    let s = usize::from(params.symbol_width);
    if !chunk.len().is_multiple_of(s) || chunk.len() > params.chunk_size as usize {
        return Err(CodecError::invalid(
            NAME,
            format!(
                "a chunk of {} bytes is not whole symbols within the chunk size",
                chunk.len()
            ),
        ));
    }
    let w = usize::from(params.window);
    let at = out.len();
    out.resize(at + chunk.len(), 0);
    let size = ChunkCompressor::with(|cc| {
        let dst = &mut out[at..];
        match s {
            1 => cc.compress::<1>(chunk, w, dst),
            2 => cc.compress::<2>(chunk, w, dst),
            4 => cc.compress::<4>(chunk, w, dst),
            _ => cc.compress::<8>(chunk, w, dst),
        }
    });
    out.truncate(at + size);
    Ok(size)
}
