//! The median of timed runs: the one definition every harness reports (the GPU
//! benchmark, the query benchmark, the examples and benches). Depends on nothing of
//! colzip, so every layer may use it.
//!
//! Two conventions for an even count are in use, each kept by the figures that report
//! it: [`median`] (and [`median_duration`]) take the mean of the two middle runs;
//! [`upper_median`] takes the upper one, a run that was measured.
//!
//! ```
//! use colzip::measure::{median, upper_median};
//! assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
//! assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
//! assert_eq!(upper_median(&mut [4.0, 1.0, 3.0, 2.0]), 3.0);
//! ```

use std::cmp::Ordering;
use std::time::Duration;

/// Sorts `values` by `order` and returns the two middle values (the same one twice for an
/// odd count), or `None` when there are none.
fn middle<T: Copy>(values: &mut [T], order: impl FnMut(&T, &T) -> Ordering) -> Option<(T, T)> {
    values.sort_by(order);
    let n = values.len();
    (n > 0).then(|| (values[(n - 1) / 2], values[n / 2]))
}

/// The median of `seconds` (sorted in place): the middle value, or the mean of the two
/// middle values of an even count; 0 when empty.
pub fn median(seconds: &mut [f64]) -> f64 {
    middle(seconds, f64::total_cmp).map_or(0.0, |(low, high)| (low + high) / 2.0)
}

/// The median of `seconds` (sorted in place) taken as the upper of the two middle
/// values of an even count, so that it is one of the runs; 0 when empty.
pub fn upper_median(seconds: &mut [f64]) -> f64 {
    middle(seconds, f64::total_cmp).map_or(0.0, |(_, high)| high)
}

/// [`median`] of durations (sorted in place): the mean of the two middle values of an
/// even count, to the nanosecond; zero when empty.
pub fn median_duration(times: &mut [Duration]) -> Duration {
    middle(times, Duration::cmp).map_or(Duration::ZERO, |(low, high)| (low + high) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_counts_take_the_middle_value() {
        assert_eq!(median(&mut [5.0]), 5.0);
        assert_eq!(median(&mut [9.0, 1.0, 5.0]), 5.0);
        assert_eq!(upper_median(&mut [9.0, 1.0, 5.0]), 5.0);
        // Exactly the middle value, not a value rebuilt from it.
        let x = 0.1 + 0.2;
        assert_eq!(median(&mut [1.0, x, 0.0]).to_bits(), x.to_bits());
    }

    #[test]
    fn even_counts_take_the_mean_or_the_upper_value() {
        assert_eq!(median(&mut [9.0, 1.0, 5.0, 3.0]), 4.0);
        assert_eq!(upper_median(&mut [9.0, 1.0, 5.0, 3.0]), 5.0);
        assert_eq!(upper_median(&mut [2.0, 1.0]), 2.0);
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(upper_median(&mut []), 0.0);
        assert_eq!(median_duration(&mut []), Duration::ZERO);
    }

    #[test]
    fn durations() {
        let ms = Duration::from_millis;
        assert_eq!(median_duration(&mut [ms(5)]), ms(5));
        assert_eq!(median_duration(&mut [ms(9), ms(1), ms(5)]), ms(5));
        assert_eq!(median_duration(&mut [ms(9), ms(1), ms(5), ms(3)]), ms(4));
        // The mean of an odd pair of nanoseconds rounds down, as Duration's division does.
        let ns = Duration::from_nanos;
        assert_eq!(median_duration(&mut [ns(1), ns(2)]), ns(1));
    }
}
