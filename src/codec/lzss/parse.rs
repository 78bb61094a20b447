//! Step 2: the greedy parse, a chain of next-position links (pointer jumping on a GPU).

use super::*;
// Step 2: the greedy parse (a chain of next-position links; pointer jumping on a GPU).

/// One token of a chunk's parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Token {
    /// The symbol at `pos` is stored as is.
    Literal { pos: u32 },
    /// The symbols at `pos..pos + m.len` are a copy of those `m.dist` symbols back.
    Match { pos: u32, m: Match },
}

/// The greedy parse over per-position matches (from [`find_matches`]): starting at 0,
/// position `i` links to `i + len` when it has a match and to `i + 1` otherwise; the
/// tokens are the positions reached from 0. A GPU finds them by pointer jumping on the
/// `next` links.
pub fn greedy_parse(matches: &[Option<Match>]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < matches.len() {
        match matches[i] {
            Some(m) => {
                tokens.push(Token::Match { pos: i as u32, m });
                i += usize::from(m.len);
            }
            None => {
                tokens.push(Token::Literal { pos: i as u32 });
                i += 1;
            }
        }
    }
    tokens
}
