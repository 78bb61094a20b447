//! Partial aggregations folded into the compressed scan's consumer: where a query sums,
//! averages or counts decimal arithmetic over a compressed table (TPC-H Q1's
//! `sum(l_extendedprice * (1 - l_discount) * (1 + l_tax))`), one operator evaluates the
//! arguments as unscaled integers and adds them into per-group states, instead of a
//! projection building a `Decimal128` array per expression and DataFusion's aggregation
//! reading them back.
//!
//! The rule ([`AggregateOverCompressedScan`]) is in the sessions colzip makes
//! ([`context`](crate::datafusion::session::context) and the others); a session of one's
//! own adds it with `SessionStateBuilder::with_physical_optimizer_rule`. The results are
//! DataFusion's: the states are the ones its partial aggregation emits, and its final
//! aggregation merges them.
//!
//! Files: `rule.rs` (which plans are replaced), `exec.rs` (the operator), `expr.rs`
//! (arguments as unscaled integers), `states.rs` (per-group states).

mod exec;
mod expr;
mod rule;
mod states;

#[cfg(test)]
mod tests;

pub use exec::FixedPointAggregateExec;
pub use rule::AggregateOverCompressedScan;
