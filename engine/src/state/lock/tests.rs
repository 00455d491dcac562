//! Unit tests of `lock.rs`.

use super::*;
use crate::os::clock::{SimulatedClock, SystemClock};
use crate::os::liveness::SignalZero;
use crate::state::paths::Skill;
use std::collections::HashMap;
use std::sync::Mutex;
use std::thread;

/// A process table where listed PIDs answer as given, all others ESRCH.
#[derive(Debug, Default)]
struct Table(Mutex<HashMap<u32, (SignalZero, Option<u64>)>>);

impl Table {
    fn with(self, pid: u32, answer: SignalZero, start: Option<u64>) -> Self {
        self.0.lock().unwrap().insert(pid, (answer, start));
        self
    }
    fn kill(&self, pid: u32) {
        self.0.lock().unwrap().remove(&pid);
    }
}

impl ProcessProbe for Table {
    fn signal_zero(&self, pid: u32) -> SignalZero {
        self.0
            .lock()
            .unwrap()
            .get(&pid)
            .map(|a| a.0.clone())
            .unwrap_or(SignalZero::NoSuchProcess)
    }
    fn start_time(&self, pid: u32) -> Option<u64> {
        self.0.lock().unwrap().get(&pid).and_then(|a| a.1)
    }
}

const ME: Identity = Identity {
    pid: 100,
    process_start: Some(1),
};

fn setup() -> (tempfile::TempDir, StatePaths) {
    let tmp = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(tmp.path(), Skill::Work, None);
    (tmp, paths)
}

fn plant(paths: &StatePaths, pid: u32, iteration: u64, start: Option<u64>) {
    files::ensure_private_dir(&paths.dir).unwrap();
    let record = LockRecord {
        pid,
        iteration,
        started_at: "2026-05-09T14:50:00Z".into(),
        skill: "work".into(),
        process_start: start,
        extra: Map::new(),
    };
    std::fs::write(paths.lock(), record.to_bytes()).unwrap();
}

fn on_disk(paths: &StatePaths) -> LockRecord {
    serde_json::from_slice(&std::fs::read(paths.lock()).unwrap()).unwrap()
}

#[expect(
    clippy::result_large_err,
    reason = "test helper mirrors acquire's answer"
)]
fn take(
    paths: &StatePaths,
    probe: &Table,
    mode: LockMode<'_>,
) -> Result<(HeldLock, Acquisition), Denied> {
    acquire(paths, probe, ME, 3, "2026-05-09T15:00:00Z", mode).unwrap()
}

#[test]
fn fresh_acquire_writes_contract_fields_and_release_removes() {
    let (_tmp, paths) = setup();
    let (held, how) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    assert_eq!(how, Acquisition::Fresh);
    let rec = on_disk(&paths);
    assert_eq!(
        (rec.pid, rec.iteration, rec.skill.as_str()),
        (100, 3, "work")
    );
    assert_eq!(rec.started_at, "2026-05-09T15:00:00Z");
    assert_eq!(rec.process_start, Some(1));
    assert_eq!(held.release().unwrap(), Release::Released);
    assert!(!paths.lock().exists());
    assert!(paths.lock_guard().exists(), "the guard is never deleted");
}

#[test]
fn skip_mode_reports_live_holder_with_contract_note() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, Some(70));
    let probe = Table::default().with(7, SignalZero::Delivered, Some(70));
    let denied = take(&paths, &probe, LockMode::Skip).unwrap_err();
    assert_eq!(
        denied.holder().skip_note("linux"),
        "Previous iteration 2 still active (pid 7) — skipping this tick"
    );
    // Regression: `--lock wait` said it waited "… — skipping this tick".
    assert_eq!(
        denied.holder().held_by("linux"),
        "previous iteration 2 still active, pid 7"
    );
    assert_eq!(on_disk(&paths).pid, 7, "the holder's lock is untouched");
}

#[test]
fn eperm_holder_is_treated_as_alive() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::PermissionDenied, None);
    assert!(matches!(
        take(&paths, &probe, LockMode::Skip).unwrap_err(),
        Denied::Held(Holder::Alive(_))
    ));
}

#[test]
fn dead_holder_is_reaped_with_note() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, Some(70));
    let (_held, how) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    assert_eq!(how.note().unwrap(), "Reaped stale lock for pid 7");
    assert_eq!(on_disk(&paths).pid, 100);
}

#[test]
fn recycled_pid_holder_is_reaped() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, Some(70));
    let probe = Table::default().with(7, SignalZero::Delivered, Some(71));
    let (_held, how) = take(&paths, &probe, LockMode::Skip).unwrap();
    assert!(matches!(
        how,
        Acquisition::Reaped {
            pid: 7,
            verdict: Liveness::Recycled { .. }
        }
    ));
}

#[test]
fn lock_recording_our_pid_from_an_earlier_process_is_stale() {
    let (_tmp, paths) = setup();
    plant(&paths, ME.pid, 2, Some(99));
    let (_held, how) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    assert!(matches!(how, Acquisition::Reaped { pid: 100, .. }));
}

#[test]
fn lock_is_not_reentrant() {
    let (_tmp, paths) = setup();
    let (_held, _) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    assert!(matches!(
        take(&paths, &Table::default(), LockMode::Skip).unwrap_err(),
        Denied::Held(Holder::Alive(_))
    ));
}

#[test]
fn ambiguous_holder_skips_with_warning() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::Failed("EINVAL".into()), None);
    let denied = take(&paths, &probe, LockMode::Skip).unwrap_err();
    assert_eq!(
        denied.holder().skip_note("linux"),
        "Lockfile staleness check ambiguous for pid 7 on linux — treating as alive (skipping this tick)."
    );
}

#[test]
fn unreadable_lock_is_treated_as_held() {
    let (_tmp, paths) = setup();
    files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(paths.lock(), "{not json").unwrap();
    let denied = take(&paths, &Table::default(), LockMode::Skip).unwrap_err();
    assert!(matches!(denied.holder(), Holder::Unreadable { .. }));
    assert!(denied.holder().skip_note("linux").contains("--lock=force"));
}

#[test]
fn unknown_lock_fields_are_tolerated() {
    let (_tmp, paths) = setup();
    files::ensure_private_dir(&paths.dir).unwrap();
    std::fs::write(
            paths.lock(),
            r#"{"pid":7,"iteration":2,"started_at":"2026-05-09T14:50:00Z","skill":"work","host":"ci-3"}"#,
        )
        .unwrap();
    let probe = Table::default().with(7, SignalZero::Delivered, None);
    let denied = take(&paths, &probe, LockMode::Skip).unwrap_err();
    let Holder::Alive(rec) = denied.holder() else {
        panic!("{denied:?}")
    };
    assert_eq!(rec.extra["host"], "ci-3");
}

#[test]
fn wait_mode_expires_on_a_live_holder() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::Delivered, None);
    // An hour's wait, simulated: the deadline comes without the hour.
    let clock = SimulatedClock::new(None);
    let mode = LockMode::Wait {
        poll: Duration::from_secs(5),
        deadline: clock.monotonic() + Duration::from_secs(3600),
        clock: &clock,
        interrupted: &|| false,
        waiting: &mut |_| {},
    };
    assert!(matches!(
        take(&paths, &probe, mode).unwrap_err(),
        Denied::WaitExpired(Holder::Alive(_))
    ));
}

#[test]
fn wait_mode_acquires_once_the_holder_dies() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = std::sync::Arc::new(Table::default().with(7, SignalZero::Delivered, None));
    let (tx, rx) = std::sync::mpsc::channel();
    let killer = {
        let probe = probe.clone();
        thread::spawn(move || {
            // The waiter has been refused once: now let the holder die.
            rx.recv().unwrap();
            probe.kill(7);
        })
    };
    #[derive(Debug)]
    struct Notify<'a>(&'a Table, Mutex<Option<std::sync::mpsc::Sender<()>>>);
    impl ProcessProbe for Notify<'_> {
        fn signal_zero(&self, pid: u32) -> SignalZero {
            let answer = self.0.signal_zero(pid);
            if let Some(tx) = self.1.lock().unwrap().take() {
                tx.send(()).unwrap();
            }
            answer
        }
        fn start_time(&self, pid: u32) -> Option<u64> {
            self.0.start_time(pid)
        }
    }
    let notify = Notify(&probe, Mutex::new(Some(tx)));
    let clock = SystemClock;
    let mode = LockMode::Wait {
        poll: Duration::from_millis(1),
        deadline: clock.monotonic() + Duration::from_secs(60),
        clock: &clock,
        interrupted: &|| false,
        waiting: &mut |_| {},
    };
    let (_held, how) = acquire(&paths, &notify, ME, 3, "2026-05-09T15:00:00Z", mode)
        .unwrap()
        .unwrap();
    killer.join().unwrap();
    assert!(matches!(how, Acquisition::Reaped { pid: 7, .. }));
}

#[test]
fn wait_mode_stops_waiting_when_interrupted() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::Delivered, None);
    let clock = SystemClock;
    let mode = LockMode::Wait {
        poll: Duration::from_secs(3600),
        deadline: clock.monotonic() + Duration::from_secs(3600),
        clock: &clock,
        interrupted: &|| true,
        waiting: &mut |_| {},
    };
    assert!(matches!(
        take(&paths, &probe, mode).unwrap_err(),
        Denied::WaitInterrupted(Holder::Alive(_))
    ));
}

#[test]
fn force_yes_replaces_live_holder_with_note() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::Delivered, None);
    let mut asked = Vec::new();
    let mut decide = |h: &Holder| {
        asked.push(h.pid());
        ForceDecision::Yes
    };
    let (_held, how) = take(&paths, &probe, LockMode::Force(&mut decide)).unwrap();
    assert_eq!(asked, vec![Some(7)]);
    assert_eq!(
        how.note().unwrap(),
        "Force-unlocked previous iteration (was pid 7) — proceeding"
    );
    assert_eq!(on_disk(&paths).pid, 100);
}

#[test]
fn force_no_and_stop_leave_the_holder() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe = Table::default().with(7, SignalZero::Delivered, None);
    let mut no = |_: &Holder| ForceDecision::No;
    assert!(matches!(
        take(&paths, &probe, LockMode::Force(&mut no)).unwrap_err(),
        Denied::ForceDeclined(_)
    ));
    let mut stop = |_: &Holder| ForceDecision::Stop;
    assert!(matches!(
        take(&paths, &probe, LockMode::Force(&mut stop)).unwrap_err(),
        Denied::ForceStopped(_)
    ));
    assert_eq!(on_disk(&paths).pid, 7);
}

#[test]
fn force_does_not_ask_about_a_dead_holder() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let mut never = |_: &Holder| panic!("asked about a dead holder");
    let (_held, how) = take(&paths, &Table::default(), LockMode::Force(&mut never)).unwrap();
    assert!(matches!(how, Acquisition::Reaped { pid: 7, .. }));
}

#[test]
fn force_asks_again_when_the_lock_changes_hands_meanwhile() {
    let (_tmp, paths) = setup();
    plant(&paths, 7, 2, None);
    let probe =
        Table::default()
            .with(7, SignalZero::Delivered, None)
            .with(8, SignalZero::Delivered, None);
    let mut asked = Vec::new();
    let mut decide = |h: &Holder| {
        asked.push(h.pid());
        if asked.len() == 1 {
            plant(&paths, 8, 3, None);
        }
        ForceDecision::Yes
    };
    let (_held, _) = take(&paths, &probe, LockMode::Force(&mut decide)).unwrap();
    assert_eq!(asked, vec![Some(7), Some(8)]);
}

#[test]
fn release_leaves_a_successor_lock_alone() {
    let (_tmp, paths) = setup();
    let (held, _) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    plant(&paths, 8, 4, None);
    assert_eq!(
        held.release().unwrap(),
        Release::TakenOver { by_pid: Some(8) }
    );
    assert_eq!(on_disk(&paths).pid, 8);
}

#[test]
fn drop_releases_and_set_iteration_rewrites() {
    let (_tmp, paths) = setup();
    {
        let (mut held, _) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
        assert!(held.set_iteration(9).unwrap());
        assert_eq!(on_disk(&paths).iteration, 9);
    }
    assert!(!paths.lock().exists());
}

#[test]
fn set_iteration_leaves_a_lock_that_already_names_it() {
    use std::os::unix::fs::MetadataExt;
    let (_tmp, paths) = setup();
    let (mut held, _) = take(&paths, &Table::default(), LockMode::Skip).unwrap();
    let iteration = on_disk(&paths).iteration;
    let inode = std::fs::metadata(paths.lock()).unwrap().ino();
    assert!(held.set_iteration(iteration).unwrap());
    assert_eq!(
        std::fs::metadata(paths.lock()).unwrap().ino(),
        inode,
        "not written again"
    );
    assert!(held.set_iteration(iteration + 1).unwrap());
    assert_ne!(std::fs::metadata(paths.lock()).unwrap().ino(), inode);
    assert_eq!(on_disk(&paths).iteration, iteration + 1);
}

#[test]
fn symlinked_lock_is_refused() {
    let (tmp, paths) = setup();
    files::ensure_private_dir(&paths.dir).unwrap();
    let target = tmp.path().join("elsewhere");
    std::fs::write(&target, "x").unwrap();
    std::os::unix::fs::symlink(&target, paths.lock()).unwrap();
    let err = acquire(&paths, &Table::default(), ME, 1, "t", LockMode::Skip).unwrap_err();
    assert!(
        matches!(err, LockError::File(FileError::Symlink { .. })),
        "{err}"
    );
}

#[test]
fn racing_threads_produce_one_holder() {
    let (_tmp, paths) = setup();
    let probe = Table::default();
    let barrier = std::sync::Barrier::new(8);
    let winners: Vec<bool> = thread::scope(|s| {
        let handles: Vec<_> = (0..8u32)
            .map(|i| {
                let (paths, probe, barrier) = (&paths, &probe, &barrier);
                s.spawn(move || {
                    let me = Identity {
                        pid: 1000 + i,
                        process_start: Some(1),
                    };
                    // Every racer sees the others as alive.
                    for other in 0..8 {
                        probe
                            .0
                            .lock()
                            .unwrap()
                            .insert(1000 + other, (SignalZero::Delivered, Some(1)));
                    }
                    barrier.wait();
                    let got = acquire(paths, probe, me, 1, "t", LockMode::Skip).unwrap();
                    got.map(|(held, _)| std::mem::forget(held)).is_ok()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(winners.iter().filter(|w| **w).count(), 1, "{winners:?}");
}
