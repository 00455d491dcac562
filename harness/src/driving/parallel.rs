//! Runs a suite's cases on N worker threads and hands each result back in
//! case order ([`run_in_order`]), so `sdd-evals run -j N` prints the same
//! report, line for line, whatever order the cases finish in.
//!
//! Every case already lives in its own sandbox with its own mock tracker,
//! processes and reaper marker, so cases share nothing but the machine.
//! Workers take the next case from a shared counter; the calling thread
//! owns all output: it hears of every start and finish (for a progress
//! line) and releases a result only once every earlier one is out.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// What the caller hears while the cases run, on its own thread.
#[derive(Debug)]
pub enum Update<'a, R> {
    /// Cases finished so far, of how many, and those still running (by
    /// index, ascending).
    Progress {
        done: usize,
        total: usize,
        running: &'a [usize],
    },
    /// The result of case `index`; every earlier index came first.
    Ready(usize, &'a R),
}

enum Msg<R> {
    Started(usize),
    Finished(usize, R),
}

/// Runs `work` on every item with at most `jobs` at once (at least one);
/// the results in item order. The items at the indices in `first` start
/// first, in that order (the slowest, so none is left to run alone at the
/// end); the rest follow in item order.
pub fn run_in_order<T, R, W, S>(
    items: &[T],
    jobs: usize,
    first: &[usize],
    work: W,
    mut sink: S,
) -> Vec<R>
where
    T: Sync,
    R: Send,
    W: Fn(&T) -> R + Sync,
    S: FnMut(Update<'_, R>),
{
    let total = items.len();
    let order = start_order(total, first);
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..total).map(|_| None).collect();
    let mut running: Vec<usize> = Vec::new();
    let mut released = 0;
    let mut done = 0;
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..jobs.clamp(1, total.max(1)) {
            let (tx, next, work, order) = (tx.clone(), &next, &work, &order);
            scope.spawn(move || {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let item = &items[i];
                    if tx.send(Msg::Started(i)).is_err() {
                        break;
                    }
                    let result = work(item);
                    if tx.send(Msg::Finished(i, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for msg in rx {
            match msg {
                Msg::Started(i) => {
                    let at = running.partition_point(|r| *r < i);
                    running.insert(at, i);
                }
                Msg::Finished(i, result) => {
                    running.retain(|r| *r != i);
                    done += 1;
                    slots[i] = Some(result);
                    while let Some(Some(r)) = slots.get(released) {
                        sink(Update::Ready(released, r));
                        released += 1;
                    }
                }
            }
            sink(Update::Progress {
                done,
                total,
                running: &running,
            });
        }
    });
    slots.into_iter().flatten().collect()
}

/// Every index below `total` once: those of `first` (in range, not
/// repeated) in their order, then the others ascending.
fn start_order(total: usize, first: &[usize]) -> Vec<usize> {
    let mut taken = vec![false; total];
    let mut order = Vec::with_capacity(total);
    for &i in first {
        if i < total && !taken[i] {
            taken[i] = true;
            order.push(i);
        }
    }
    order.extend((0..total).filter(|i| !taken[*i]));
    order
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Item 0 is held until items 1–3 have all finished, yet the results
    /// come out in item order. The four meet at a barrier first, so all
    /// four have started before any finishes, however the threads are
    /// scheduled (under load one worker could otherwise run 1, 2 and 3
    /// before item 0's start was even sent).
    #[test]
    fn results_come_out_in_item_order_whatever_order_they_finish_in() {
        let (release, held) = mpsc::channel::<()>();
        let held = Mutex::new(held);
        let mut release = Some(release);
        let all_started = std::sync::Barrier::new(4);
        let mut ready = Vec::new();
        let mut peak = 0;
        let results = run_in_order(
            &[0, 1, 2, 3],
            4,
            &[],
            |&i| {
                all_started.wait();
                if i == 0 {
                    held.lock().unwrap().recv().unwrap();
                }
                i * 10
            },
            |update| match update {
                Update::Ready(i, r) => ready.push((i, *r)),
                Update::Progress { done, running, .. } => {
                    peak = peak.max(running.len());
                    if done == 3 {
                        // Only item 0 is left: 1, 2 and 3 finished before it.
                        release.take().map(|tx| tx.send(()));
                    }
                }
            },
        );
        assert_eq!(results, [0, 10, 20, 30]);
        assert_eq!(ready, [(0, 0), (1, 10), (2, 20), (3, 30)]);
        assert_eq!(peak, 4, "the four items ran at once");
    }

    #[test]
    fn one_job_runs_one_at_a_time_and_nothing_is_fine() {
        let mut peak = 0;
        let results = run_in_order(
            &[1, 2, 3],
            1,
            &[],
            |x| x + 1,
            |u| {
                if let Update::Progress { running, .. } = u {
                    peak = peak.max(running.len());
                }
            },
        );
        assert_eq!(results, [2, 3, 4]);
        assert_eq!(peak, 1);
        let none: Vec<u8> = run_in_order(&[] as &[u8], 0, &[], |x| *x, |_| {});
        assert!(none.is_empty());
    }

    /// With one job the start order is the order the items run in; the
    /// results still come out in item order.
    #[test]
    fn the_first_items_start_first_and_report_in_item_order() {
        let started = Mutex::new(Vec::new());
        let results = run_in_order(
            &[0, 1, 2, 3, 4],
            1,
            &[3, 9, 1, 3],
            |&i| {
                started.lock().unwrap().push(i);
                i
            },
            |_| {},
        );
        assert_eq!(results, [0, 1, 2, 3, 4]);
        assert_eq!(*started.lock().unwrap(), [3, 1, 0, 2, 4]);
    }
}
