//! A part's rounds and figures, printed as they come and in the summary.

use std::collections::BTreeSet;
use std::time::Duration;

use e2e::Error;
use e2e::bench::secs;

use crate::OUTAGE_LIMIT;

pub(crate) struct Round {
    pub(crate) victim: String,
    pub(crate) successor: String,
    pub(crate) writable: Option<Duration>,
    pub(crate) refused: usize,
    pub(crate) lost_now: usize,
    pub(crate) acked_so_far: usize,
}

pub(crate) struct Part {
    name: String,
    rounds: Vec<Round>,
    acked: usize,
    lost: usize,
    refused_total: usize,
}

impl Part {
    pub(crate) fn new(name: String) -> Self {
        println!();
        println!("== {name} ==");
        Part {
            name,
            rounds: Vec::new(),
            acked: 0,
            lost: 0,
            refused_total: 0,
        }
    }

    pub(crate) fn record(&mut self, round: Round) {
        println!(
            "round {:>2}: {} -> {}: writable after {}, {} writes refused/failed meanwhile, \
             acknowledged writes lost {} (of {} acknowledged so far)",
            self.rounds.len() + 1,
            round.victim,
            round.successor,
            round
                .writable
                .map_or_else(|| format!("NOT within {}", secs(OUTAGE_LIMIT)), secs),
            round.refused,
            round.lost_now,
            round.acked_so_far
        );
        self.rounds.push(round);
    }

    pub(crate) fn times(&self) -> Vec<Duration> {
        let mut times: Vec<Duration> = self.rounds.iter().filter_map(|r| r.writable).collect();
        times.sort();
        times
    }

    /// `rounds` failovers, each by `round` from the current primary and the acknowledged keys
    /// missing so far, a second apart, until one fails: the last primary, and the acknowledged
    /// keys missing on it.
    pub(crate) async fn run_rounds<P>(
        &mut self,
        rounds: u32,
        mut primary: P,
        mut round: impl AsyncFnMut(&P, &BTreeSet<u64>) -> Result<(Round, P, BTreeSet<u64>), Error>,
    ) -> (P, BTreeSet<u64>) {
        let mut missing_before = BTreeSet::new();
        for _ in 0..rounds {
            match round(&primary, &missing_before).await {
                Ok((done, next, missing_now)) => {
                    self.record(done);
                    primary = next;
                    missing_before = missing_now;
                }
                Err(e) => {
                    println!("round {}: {e:?}", self.rounds.len() + 1);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        (primary, missing_before)
    }

    /// The part's figures: `acked` writes acknowledged, of which `lost` missing on the last
    /// primary `on` (when it cannot be checked: the `missing_before` of the last round),
    /// `refused_total` writes refused or failed over the whole run.
    pub(crate) fn finish(
        &mut self,
        on: &str,
        acked: usize,
        lost: Result<usize, String>,
        missing_before: usize,
        refused_total: usize,
    ) {
        let lost = lost.unwrap_or_else(|e| {
            println!("final check on {on}: {e}");
            missing_before
        });
        self.acked = acked;
        self.lost = lost;
        self.refused_total = refused_total;
        let times = self.times();
        let refused: usize = self.rounds.iter().map(|r| r.refused).sum();
        println!(
            "{}: time to writable median {}, max {} ({} of {} rounds writable within {}); \
             acknowledged writes lost {lost} of {acked}; writes refused/failed during the \
             outages {refused} (all run: {refused_total})",
            self.name,
            median(&times).map_or_else(|| "-".into(), secs),
            times.last().copied().map_or_else(|| "-".into(), secs),
            times.len(),
            self.rounds.len(),
            secs(OUTAGE_LIMIT)
        );
    }

    pub(crate) fn summary_row(&self) {
        let times = self.times();
        let refused: usize = self.rounds.iter().map(|r| r.refused).sum();
        println!(
            "{:<72} {:>6} {:>10} {:>10} {:>14} {:>12}",
            self.name,
            self.rounds.len(),
            median(&times).map_or_else(|| "-".into(), secs),
            times.last().copied().map_or_else(|| "-".into(), secs),
            format!("{} / {}", self.lost, self.acked),
            refused
        );
    }
}

pub(crate) fn median(sorted: &[Duration]) -> Option<Duration> {
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2),
    }
}
