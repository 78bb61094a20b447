//! Steps of work through several lanes at once, so that host↔device copies, kernels and
//! the host's gathering and scattering of successive steps overlap.
//!
//! A step goes through three stages, each given the lane it runs on:
//! 1. **submit**: host work before the GPU's (gather the step's input into pinned
//!    staging) and the GPU work, queued: the copy to the device, the kernels, and the
//!    copies back of whatever the host needs to see first (sizes, statuses);
//! 2. **collect**: wait for that, and queue what depends on it (the copy back of an
//!    output whose size the kernels decided);
//! 3. **finish**: wait for the lane and do the host work after the GPU's (check
//!    statuses, scatter the output from staging).
//!
//! While the host finishes step k-2, step k-1's output is on its way back and step k runs
//! on the device. Steps finish in the order given. A lane holds one step at a time; with
//! fewer lanes than three (other callers hold them), the pipeline waits for a lane's
//! previous step before giving it the next. The stages run on the runtime's host pool
//! ([`on_host`]), never on rayon's global pool, whose workers may all be waiting for the
//! lanes this pipeline holds.

use std::collections::VecDeque;

use super::device::Gpu;
use super::error::GpuError;
use super::host::on_host;
use super::lane::{Lane, LaneGuard};
use crate::trace::{self, Busy, Counter};

/// Lanes a pipeline asks for: one step finishing, one coming back, one running.
pub const PIPELINE_LANES: usize = 3;

/// The three stages of a kind of work; see the module docs.
pub trait Stages: Send {
    type Step: Send;
    type Submitted: Send;
    type Collected: Send;
    type Error: From<GpuError> + Send;

    fn submit(&mut self, lane: &mut Lane, step: Self::Step)
    -> Result<Self::Submitted, Self::Error>;
    fn collect(
        &mut self,
        lane: &mut Lane,
        submitted: Self::Submitted,
    ) -> Result<Self::Collected, Self::Error>;
    fn finish(&mut self, lane: &mut Lane, collected: Self::Collected) -> Result<(), Self::Error>;
}

enum InFlight<S: Stages> {
    Submitted(S::Submitted),
    Collected(S::Collected),
}

/// Runs `steps` through `stages` on up to [`PIPELINE_LANES`] lanes of `gpu`.
pub fn run_pipeline<S: Stages>(
    gpu: &Gpu,
    steps: impl IntoIterator<Item = S::Step>,
    stages: &mut S,
) -> Result<(), S::Error> {
    let mut steps = steps.into_iter().peekable();
    if steps.peek().is_none() {
        return Ok(());
    }
    let mut lanes: Vec<LaneGuard<'_>> = vec![gpu.lane()?];
    while lanes.len() < PIPELINE_LANES {
        match gpu.try_lane()? {
            Some(lane) => lanes.push(lane),
            None => break,
        }
    }
    let mut queue: VecDeque<(usize, InFlight<S>)> = VecDeque::new();
    let (mut submitting, mut collecting, mut finishing) =
        (Busy::default(), Busy::default(), Busy::default());
    let mut count = 0;
    let started = std::time::Instant::now();
    let before = [Counter::Gather, Counter::Scatter, Counter::Wait].map(trace::counted);
    for (k, step) in steps.enumerate() {
        count += 1;
        let lane = k % lanes.len();
        // The lane must be free: finish, in order, every step up to its last one.
        while queue.iter().any(|(l, _)| *l == lane) {
            finishing.time(|| retire_front(&mut queue, &mut lanes, stages))?;
        }
        let submitted = submitting.time(|| {
            let lane: &mut Lane = &mut lanes[lane];
            on_host(|| stages.submit(lane, step))
        })?;
        // Collect the step before this one (the only one not collected yet), then finish
        // the ones before that.
        if let Some((l, InFlight::Submitted(_))) = queue.back() {
            let l = *l;
            if let Some((_, InFlight::Submitted(previous))) = queue.pop_back() {
                let collected = collecting.time(|| {
                    let lane: &mut Lane = &mut lanes[l];
                    on_host(|| stages.collect(lane, previous))
                })?;
                queue.push_back((l, InFlight::Collected(collected)));
            }
        }
        while queue.len() > 1 {
            finishing.time(|| retire_front(&mut queue, &mut lanes, stages))?;
        }
        queue.push_back((lane, InFlight::Submitted(submitted)));
    }
    while !queue.is_empty() {
        finishing.time(|| retire_front(&mut queue, &mut lanes, stages))?;
    }
    trace::line(|| {
        let [gather, scatter, wait] =
            [Counter::Gather, Counter::Scatter, Counter::Wait].map(trace::counted);
        format!(
            "pipeline: {count} steps on {} lanes in {:.4} s: submit {:.4} s, collect {:.4} s, \
             finish {:.4} s (gather {:.4}, scatter {:.4}, waiting {:.4})",
            lanes.len(),
            started.elapsed().as_secs_f64(),
            submitting.seconds(),
            collecting.seconds(),
            finishing.seconds(),
            gather - before[0],
            scatter - before[1],
            wait - before[2],
        )
    });
    Ok(())
}

/// Collects (if needed) and finishes the oldest step.
fn retire_front<S: Stages>(
    queue: &mut VecDeque<(usize, InFlight<S>)>,
    lanes: &mut [LaneGuard<'_>],
    stages: &mut S,
) -> Result<(), S::Error> {
    let Some((l, entry)) = queue.pop_front() else {
        return Ok(());
    };
    let lane: &mut Lane = &mut lanes[l];
    on_host(|| {
        let collected = match entry {
            InFlight::Submitted(s) => stages.collect(lane, s)?,
            InFlight::Collected(c) => c,
        };
        stages.finish(lane, collected)
    })
}
