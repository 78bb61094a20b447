//! A batch across several GPUs: its buffers cut into contiguous groups of about equal
//! bytes, one group per device, all running at once. Every buffer's stream depends on
//! that buffer alone, so the bytes are the same however many devices ran.

use std::ops::Range;

use super::super::error::Result;
use super::super::placement::next_turn;
use crate::gpu::Gpu;

/// Bytes per device below which a batch does not split further: a smaller share costs a
/// device more in launches and synchronisation than it saves.
pub(crate) const MIN_BYTES_PER_DEVICE: usize = 64 << 20;

/// Contiguous, non-empty groups of the buffers weighing `lens`, at most `devices` of
/// them and none much under [`MIN_BYTES_PER_DEVICE`], of about equal bytes. An empty
/// batch is one empty group.
pub(crate) fn split(lens: &[usize], devices: usize) -> Vec<Range<usize>> {
    let total: usize = lens.iter().sum();
    let groups = devices
        .min(lens.len())
        .min(total / MIN_BYTES_PER_DEVICE)
        .max(1);
    let mut ranges = Vec::with_capacity(groups);
    let mut start = 0;
    let mut seen = 0;
    for (i, &len) in lens.iter().enumerate() {
        seen += len;
        let cut = ranges.len() + 1;
        // Close group `cut - 1` once its share is reached, leaving a buffer for each
        // group still to come.
        if cut < groups && seen * groups >= total * cut && lens.len() - (i + 1) >= groups - cut {
            ranges.push(start..i + 1);
            start = i + 1;
        }
    }
    ranges.push(start..lens.len());
    ranges
}

/// `items` cut into the consecutive `groups` (which cover it in order).
pub(crate) fn split_groups<'a, T>(items: &'a mut [T], groups: &[Range<usize>]) -> Vec<&'a mut [T]> {
    let mut rest = items;
    groups
        .iter()
        .map(|group| {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(group.len());
            rest = tail;
            head
        })
        .collect()
}

/// Runs `work` on each job, job `g` on its own device, at once; the results in job
/// order, or the first job's error in that order. One job runs on the calling thread
/// on the device whose turn it is.
pub(crate) fn across<J: Send, T: Send>(
    gpus: &'static [Gpu],
    jobs: Vec<J>,
    work: impl Fn(&'static Gpu, J) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    debug_assert!(!gpus.is_empty() && jobs.len() <= gpus.len());
    let first = next_turn(gpus.len());
    let device = |g: usize| &gpus[(first + g) % gpus.len()];
    let work = &work;
    std::thread::scope(|scope| {
        let mut jobs = jobs.into_iter();
        let Some(own) = jobs.next() else {
            return Ok(Vec::new());
        };
        let others: Vec<_> = jobs
            .enumerate()
            .map(|(g, job)| scope.spawn(move || work(device(g + 1), job)))
            .collect();
        let mut results = vec![work(device(0), own)];
        for handle in others {
            results.push(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            );
        }
        results.into_iter().collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB64: usize = MIN_BYTES_PER_DEVICE;

    fn covers(ranges: &[Range<usize>], n: usize) -> bool {
        ranges.first().is_some_and(|r| r.start == 0)
            && ranges.last().is_some_and(|r| r.end == n)
            && ranges.windows(2).all(|w| w[0].end == w[1].start)
            && (n == 0 || ranges.iter().all(|r| !r.is_empty()))
    }

    #[test]
    fn small_batches_stay_on_one_device() {
        assert_eq!(split(&[MB64 / 2, MB64 / 2 - 1], 4), vec![0..2]);
        assert_eq!(split(&[], 2), vec![0..0]);
        assert_eq!(split(&[10 * MB64], 2), vec![0..1]);
    }

    #[test]
    fn large_batches_split_evenly_in_order() {
        let lens = vec![MB64; 8];
        assert_eq!(split(&lens, 2), vec![0..4, 4..8]);
        assert_eq!(split(&lens, 4), vec![0..2, 2..4, 4..6, 6..8]);
        let uneven = [5 * MB64, MB64, MB64, MB64, MB64, MB64];
        let ranges = split(&uneven, 2);
        assert_eq!(ranges, vec![0..1, 1..6]);
        for devices in 1..6 {
            for lens in [&lens[..], &uneven[..], &[MB64; 3][..]] {
                let ranges = split(lens, devices);
                assert!(
                    covers(&ranges, lens.len()),
                    "{lens:?} on {devices}: {ranges:?}"
                );
                assert!(ranges.len() <= devices);
            }
        }
    }

    #[test]
    fn split_groups_follows_the_ranges() {
        let mut items = [1, 2, 3, 4, 5];
        let groups = split_groups(&mut items, &[0..2, 2..2, 2..5]);
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            vec![2, 0, 3]
        );
        assert_eq!(groups[2], &mut [3, 4, 5]);
    }
}
