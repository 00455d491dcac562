//! `sdd-evals run --timings`: each case's phases (world, events, ticks,
//! capture, judging, teardown), slowest first, and the run's own: loading
//! the cases, running them on N jobs, writing the reports — with the CPU
//! the run used beside its wall time, so waiting shows as wall time the
//! CPU does not explain.

use std::io::Write;
use std::time::Duration;

use super::report::CaseResult;

/// The run's phases and the CPU it used.
#[derive(Debug, Clone, Copy, Default)]
pub struct Suite {
    pub jobs: usize,
    /// Finding, reading and validating the case files.
    pub load: Duration,
    /// Running and judging every case, `jobs` at a time.
    pub cases: Duration,
    /// Writing `report.html`, `grading.json`, `benchmark.json`, `summary.md`.
    pub reports: Duration,
    /// From the command's start to the reports written.
    pub total: Duration,
    /// CPU of the harness itself and of the processes it ran, when known.
    pub cpu: Option<Cpu>,
}

/// CPU time, user and system together.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu {
    /// The harness's own threads (its mock trackers included).
    pub harness: Duration,
    /// Every process it started and waited for (engine, git, fake skill…).
    pub children: Duration,
}

fn ms(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1000.0)
}

fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// The table, one row per case (slowest first) and a row of sums, then
/// the run's phases.
pub fn table(out: &mut dyn Write, results: &[CaseResult], suite: &Suite) {
    let width = results.iter().map(|r| r.id.len()).max().unwrap_or(4).max(5);
    let _ = writeln!(
        out,
        "{:<width$}  {:>6}  {:>6}  {:>6}  {:>5}  {:>7}  {:>7}  {:>8}  {:>6}",
        "case (ms)", "world", "events", "ticks", "n", "capture", "judging", "teardown", "total"
    );
    let mut rows: Vec<&CaseResult> = results.iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.phases.total()));
    let row = |out: &mut dyn Write, id: &str, p: [Duration; 7], n: usize| {
        let _ = writeln!(
            out,
            "{id:<width$}  {:>6}  {:>6}  {:>6}  {n:>5}  {:>7}  {:>7}  {:>8}  {:>6}",
            ms(p[0]),
            ms(p[1]),
            ms(p[2]),
            ms(p[3]),
            ms(p[4]),
            ms(p[5]),
            ms(p[6]),
        );
    };
    let mut sum = [Duration::ZERO; 7];
    let mut ticks = 0;
    for r in rows {
        let p = &r.phases;
        let cols = [
            p.world,
            p.events,
            p.ticks.iter().sum(),
            p.capture,
            p.judging,
            p.teardown,
            p.total(),
        ];
        for (s, c) in sum.iter_mut().zip(cols) {
            *s += c;
        }
        ticks += p.ticks.len();
        row(out, &r.id, cols, p.ticks.len());
    }
    row(out, &format!("all {}", results.len()), sum, ticks);
    let busy = if suite.cases.is_zero() || suite.jobs == 0 {
        String::new()
    } else {
        let share = sum[6].as_secs_f64() / (suite.cases.as_secs_f64() * suite.jobs as f64);
        format!(", the jobs busy {:.0}% of it", share * 100.0)
    };
    let _ = writeln!(
        out,
        "run: {} wall — loading {}, cases {} on {} job(s){busy}, reports {}",
        secs(suite.total),
        secs(suite.load),
        secs(suite.cases),
        suite.jobs,
        secs(suite.reports),
    );
    if let Some(cpu) = suite.cpu {
        let _ = writeln!(
            out,
            "cpu: {} — the harness {}, the processes it ran {}",
            secs(cpu.harness + cpu.children),
            secs(cpu.harness),
            secs(cpu.children),
        );
    }
}
