//! An exhaustive interleaving explorer for the lease hand-off, run by plain `cargo test`.
//!
//! Each scenario is a few threads ("agents"), each a small state machine whose steps are
//! the atomic steps of the pool's code: one call on the real [`LeaseState`] or
//! [`LiveCeiling`], or one critical section (a step under a lock, which nothing else of
//! the scenario can split). The explorer runs every interleaving of those steps (depth
//! first, replaying the schedule from a fresh world at each node, so no state needs to be
//! cloned), checks the invariants after every step, reports an agent that can never run
//! again as a deadlock (a lost wake-up), and checks the end state of every schedule.
//!
//! This is sequentially consistent: it proves the *protocol* (who destroys a plan, who
//! wakes whom) for every order of the steps; the memory orderings under which those steps
//! stay atomic and ordered are what the loom tests (`src/loom_tests.rs`) check.
//!
//! What the pool's code does is mirrored step by step here (see the comments naming the
//! functions); the explorer also shows that the orderings the pool had before two fixes
//! fail (`*_is_caught` tests), so a regression to them is caught too.

use crate::pool::ceiling::LiveCeiling;
use crate::pool::lease_state::{Evicted, LeaseState, Released};

/// One thread of a scenario.
trait Agent<W> {
    /// Whether the agent can take a step now. A finished or blocked agent cannot.
    fn ready(&self, w: &W) -> bool;
    /// Whether the agent has finished (an idle server loop counts as finished).
    fn done(&self, w: &W) -> bool;
    /// One atomic step; an invariant broken by it is the error.
    fn step(&mut self, w: &mut W) -> Result<(), String>;
    fn name(&self) -> &'static str;
}

type Agents<W> = Vec<Box<dyn Agent<W>>>;

#[derive(Debug, Default)]
struct Stats {
    /// Complete schedules explored.
    schedules: u64,
    /// Steps taken, replays included.
    steps: u64,
}

#[derive(Debug)]
#[allow(dead_code)] // read through `Debug` when a test fails
struct Failure {
    what: String,
    /// The agents' names in the order they stepped.
    schedule: Vec<&'static str>,
}

/// Every interleaving of the agents `setup` makes. `end` checks each final state.
fn explore<W>(setup: &dyn Fn() -> (W, Agents<W>), end: &dyn Fn(&W) -> Result<(), String>) -> Result<Stats, Failure> {
    let mut stats = Stats::default();
    let mut schedule = Vec::new();
    dfs(setup, end, &mut schedule, &mut stats)?;
    Ok(stats)
}

fn dfs<W>(
    setup: &dyn Fn() -> (W, Agents<W>),
    end: &dyn Fn(&W) -> Result<(), String>,
    schedule: &mut Vec<usize>,
    stats: &mut Stats,
) -> Result<(), Failure> {
    let (mut w, mut agents) = setup();
    let fail = |what: String, agents: &Agents<W>, schedule: &[usize]| Failure {
        what,
        schedule: schedule.iter().map(|&i| agents[i].name()).collect(),
    };
    for (k, &i) in schedule.iter().enumerate() {
        stats.steps += 1;
        let r = agents[i].step(&mut w);
        // Earlier steps were checked at their own node; only the newest one is new.
        if k + 1 == schedule.len() {
            r.map_err(|e| fail(e, &agents, schedule))?;
        }
    }
    let ready: Vec<usize> = (0..agents.len()).filter(|&i| agents[i].ready(&w)).collect();
    if ready.is_empty() {
        stats.schedules += 1;
        if let Some(a) = agents.iter().find(|a| !a.done(&w)) {
            return Err(fail(format!("deadlock: {} can never run again", a.name()), &agents, schedule));
        }
        return end(&w).map_err(|e| fail(e, &agents, schedule));
    }
    for i in ready {
        schedule.push(i);
        dfs(setup, end, schedule, stats)?;
        schedule.pop();
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The retire / destroy hand-off (pool.rs `evict_key`, `retire`; lease.rs `Drop for Lease`;
// entry.rs `destroy_retired`; the destroyer thread; `shutdown`'s wait).
// ---------------------------------------------------------------------------------------

/// One plan and everything that refers to it.
struct Plan {
    state: LeaseState,
    /// In the cache map, where hits find it.
    in_map: bool,
    /// In the core's retired set.
    retired: bool,
    /// Handed to the destroyer's queue, not yet taken.
    queue: usize,
    /// `Core::destroying`: idle plans evicted whose destroy has not returned.
    destroying: usize,
    destroyed: usize,
    /// Leases held, by the scenario's own count.
    leases: usize,
    /// Whether a shutdown returned saying nothing was left, and what was destroyed then.
    shutdown_clean_with: Option<usize>,
    /// The destroyer's ordering: `true` is the fixed one (leave the retired set only after
    /// the destroy returned), `false` the one before the fix.
    remove_after_destroy: bool,
}

impl Plan {
    fn new(holders: usize, remove_after_destroy: bool) -> Plan {
        let state = LeaseState::new_leased();
        for _ in 1..holders {
            assert!(state.try_lease());
        }
        if holders == 0 {
            assert_eq!(state.release(), Released::Idle);
        }
        Plan {
            state,
            in_map: true,
            retired: false,
            queue: 0,
            destroying: 0,
            destroyed: 0,
            leases: holders,
            shutdown_clean_with: None,
            remove_after_destroy,
        }
    }

    /// `Core::destroy`: never with a lease out, exactly once.
    fn destroy(&mut self) -> Result<(), String> {
        if self.leases != 0 || self.state.leases() != 0 {
            return Err(format!("destroyed with {} leases out (state word says {})", self.leases, self.state.leases()));
        }
        self.destroyed += 1;
        if self.destroyed > 1 {
            return Err("destroyed twice".into());
        }
        Ok(())
    }

    /// `Drop for Lease`: the release, and whether this thread must hand the plan on.
    fn release(&mut self) -> Result<bool, String> {
        if self.leases == 0 {
            return Err("released more often than leased".into());
        }
        self.leases -= 1;
        Ok(self.state.release() == Released::LastOfRetired)
    }

    fn take_lease(&mut self) -> Result<bool, String> {
        if !self.state.try_lease() {
            return Ok(false);
        }
        if self.destroyed > 0 {
            return Err("a lease was taken on a destroyed plan".into());
        }
        self.leases += 1;
        Ok(true)
    }
}

/// Holds a lease from the start and releases it.
struct Holder {
    pc: u8,
}

impl Agent<Plan> for Holder {
    fn ready(&self, _: &Plan) -> bool {
        self.pc < 2
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 2
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        match self.pc {
            0 => self.pc = if w.release()? { 1 } else { 2 },
            _ => {
                // `retire_tx.send`
                w.queue += 1;
                self.pc = 2;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "holder"
    }
}

/// A hit (`try_hit`: the map read guard is held across `try_lease`, so the two are one
/// step against `map.remove`), or a single-flight joiner (`Step::Join`: `try_lease` on an
/// entry it holds an `Arc` to, with no map involved), that then releases.
struct Hitter {
    pc: u8,
    through_map: bool,
}

impl Agent<Plan> for Hitter {
    fn ready(&self, _: &Plan) -> bool {
        self.pc < 3
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 3
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        match self.pc {
            0 => {
                let found = !self.through_map || w.in_map;
                self.pc = if found && w.take_lease()? { 1 } else { 3 };
            }
            1 => self.pc = if w.release()? { 2 } else { 3 },
            _ => {
                w.queue += 1;
                self.pc = 3;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        if self.through_map { "hitter" } else { "joiner" }
    }
}

/// `evict_key` + `retire` (then the evictor's destroy of an idle plan), and with `shutdown`
/// set, `shutdown`'s wait after it: drain the queue itself, return once the retired set is
/// empty. (A wait that would only spin is modelled as blocked until something changes.)
struct Evictor {
    pc: u8,
    shutdown: bool,
}

impl Agent<Plan> for Evictor {
    fn ready(&self, w: &Plan) -> bool {
        match self.pc {
            0..=2 => true,
            3 => w.queue > 0 || !w.retired,
            4 => true,
            _ => false,
        }
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 5
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        let after = if self.shutdown { 3 } else { 5 };
        match self.pc {
            // `self.map.remove(key)`
            0 => {
                w.in_map = false;
                self.pc = 1;
            }
            // `retire`: under the retired lock, insert, evict, remove again if idle.
            1 => {
                w.retired = true;
                match w.state.evict() {
                    Evicted::Idle => {
                        w.retired = false;
                        self.pc = 2;
                    }
                    Evicted::Leased => self.pc = after,
                }
            }
            2 => {
                w.destroy()?;
                self.pc = after;
            }
            // `shutdown`'s loop: `retire_rx.try_recv` first, then the emptiness check.
            3 => {
                if w.queue > 0 {
                    w.queue -= 1;
                    if !w.remove_after_destroy {
                        w.retired = false;
                    }
                    self.pc = 4;
                } else {
                    w.shutdown_clean_with = Some(w.destroyed);
                    self.pc = 5;
                }
            }
            _ => {
                w.destroy()?;
                w.retired = false;
                self.pc = 3;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        if self.shutdown { "shutdown" } else { "evictor" }
    }
}

/// The destroyer thread: takes a plan from the queue, destroys it.
struct Destroyer {
    pc: u8,
}

impl Agent<Plan> for Destroyer {
    fn ready(&self, w: &Plan) -> bool {
        self.pc == 1 || w.queue > 0
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 0
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        if self.pc == 0 {
            w.queue -= 1;
            if !w.remove_after_destroy {
                // `destroy_retired` before the fix: leave the retired set, then destroy.
                w.retired = false;
            }
            self.pc = 1;
        } else {
            w.destroy()?;
            w.retired = false;
            self.pc = 0;
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "destroyer"
    }
}

fn plan_end(w: &Plan) -> Result<(), String> {
    if w.destroyed != 1 {
        return Err(format!("destroyed {} times, not once", w.destroyed));
    }
    if w.retired || w.queue != 0 {
        return Err(format!("left behind: retired {}, queued {}", w.retired, w.queue));
    }
    if w.leases != 0 || w.state.leases() != 0 {
        return Err("leases left".into());
    }
    if let Some(d) = w.shutdown_clean_with
        && d != 1
    {
        return Err(format!("shutdown returned with nothing left to wait for, but {d} destroys had finished"));
    }
    Ok(())
}

fn hand_off(holders: usize, hitters: usize, joiners: usize, shutdown: bool, remove_after_destroy: bool) -> Result<Stats, Failure> {
    let setup = move || {
        let w = Plan::new(holders, remove_after_destroy);
        let mut a: Agents<Plan> = Vec::new();
        for _ in 0..holders {
            a.push(Box::new(Holder { pc: 0 }));
        }
        for _ in 0..hitters {
            a.push(Box::new(Hitter { pc: 0, through_map: true }));
        }
        for _ in 0..joiners {
            a.push(Box::new(Hitter { pc: 0, through_map: false }));
        }
        a.push(Box::new(Evictor { pc: 0, shutdown }));
        a.push(Box::new(Destroyer { pc: 0 }));
        (w, a)
    };
    explore(&setup, &plan_end)
}

#[test]
fn a_release_racing_an_eviction_and_a_hit_destroys_once_never_under_a_lease() {
    let s = hand_off(1, 1, 0, false, true).unwrap_or_else(|f| panic!("{f:?}"));
    assert!(s.schedules >= 28, "{s:?}");
}

#[test]
fn two_releases_and_a_joiner_racing_an_eviction() {
    let s = hand_off(2, 0, 1, false, true).unwrap_or_else(|f| panic!("{f:?}"));
    assert!(s.schedules >= 194, "{s:?}");
}

#[test]
fn three_clients_racing_an_eviction_and_a_shutdown() {
    let s = hand_off(2, 1, 0, false, true).unwrap_or_else(|f| panic!("{f:?}"));
    assert!(s.schedules >= 154, "{s:?}");
    let s = hand_off(1, 1, 1, true, true).unwrap_or_else(|f| panic!("{f:?}"));
    assert!(s.schedules >= 900, "{s:?}");
}

#[test]
fn an_idle_plan_is_destroyed_by_its_evictor_even_with_hits_racing() {
    hand_off(0, 2, 0, false, true).unwrap_or_else(|f| panic!("{f:?}"));
}

#[test]
fn shutdown_racing_a_release_returns_only_after_the_destroy() {
    hand_off(1, 1, 0, true, true).unwrap_or_else(|f| panic!("{f:?}"));
    hand_off(2, 0, 0, true, true).unwrap_or_else(|f| panic!("{f:?}"));
}

/// Before the fix, `destroy_retired` left the retired set before destroying, so shutdown
/// could see nothing left and return while the destroyer was still in `hipfftDestroy`.
#[test]
fn the_old_destroyer_ordering_is_caught() {
    let f = hand_off(1, 0, 0, true, false).expect_err("the old ordering lets shutdown return early");
    assert!(f.what.contains("shutdown returned"), "{f:?}");
}

/// Another thread's miss (or `trim`, `set_capacity`) evicting the idle plan under the pool
/// lock (`evict_key` + `retire`, which counts it in `Core::destroying`), then destroying it
/// outside every lock (`Core::destroy`, which counts it out).
struct OtherEvictor {
    pc: u8,
}

impl Agent<Plan> for OtherEvictor {
    fn ready(&self, _: &Plan) -> bool {
        self.pc < 2
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 2
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        if self.pc == 0 {
            if !w.in_map {
                self.pc = 2;
                return Ok(());
            }
            w.in_map = false;
            assert_eq!(w.state.evict(), Evicted::Idle);
            w.destroying += 1;
            self.pc = 1;
        } else {
            w.destroy()?;
            w.destroying -= 1;
            self.pc = 2;
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "other-evictor"
    }
}

/// `shutdown` on an idle plan: evicts and destroys what is still cached, then waits until
/// nothing is being created or destroyed and the retired set is empty (`counts` false: the
/// wait before the fix, which did not count other threads' idle destroys).
struct IdleShutdown {
    pc: u8,
    counts: bool,
}

impl Agent<Plan> for IdleShutdown {
    fn ready(&self, w: &Plan) -> bool {
        match self.pc {
            0 | 1 => true,
            2 => (w.destroying == 0 || !self.counts) && !w.retired,
            _ => false,
        }
    }
    fn done(&self, _: &Plan) -> bool {
        self.pc == 3
    }
    fn step(&mut self, w: &mut Plan) -> Result<(), String> {
        match self.pc {
            0 => {
                if w.in_map {
                    w.in_map = false;
                    assert_eq!(w.state.evict(), Evicted::Idle);
                    self.pc = 1;
                } else {
                    self.pc = 2;
                }
            }
            1 => {
                w.destroy()?;
                self.pc = 2;
            }
            _ => {
                w.shutdown_clean_with = Some(w.destroyed);
                self.pc = 3;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "shutdown"
    }
}

fn idle_shutdown(counts: bool) -> Result<Stats, Failure> {
    let setup = move || {
        let w = Plan::new(0, true);
        let a: Agents<Plan> = vec![Box::new(OtherEvictor { pc: 0 }), Box::new(IdleShutdown { pc: 0, counts })];
        (w, a)
    };
    explore(&setup, &plan_end)
}

#[test]
fn shutdown_waits_for_an_idle_destroy_by_another_thread() {
    idle_shutdown(true).unwrap_or_else(|f| panic!("{f:?}"));
}

/// Before the fix, shutdown did not count idle plans other threads were destroying.
#[test]
fn the_old_shutdown_wait_is_caught() {
    let f = idle_shutdown(false).expect_err("the old wait returns during another thread's destroy");
    assert!(f.what.contains("shutdown returned"), "{f:?}");
}

// ---------------------------------------------------------------------------------------
// The waiter at the ceiling (pool.rs `acquire_slow`, `Step::Wait`; ceiling.rs
// `wait_for_change`, `notify`; lease.rs `Drop for Lease` on `Released::Idle`).
// ---------------------------------------------------------------------------------------

/// A ceiling of one slot held by one cached plan that a holder has leased; a miss on
/// another key needs that slot.
struct Ceiling {
    plan: LeaseState,
    cached: bool,
    live: usize,
    epoch: u64,
    waiters: usize,
    served: bool,
}

/// The lease holder: `release`, then on `Idle`, `if waiters() > 0 { notify() }`.
struct Releaser {
    pc: u8,
}

impl Agent<Ceiling> for Releaser {
    fn ready(&self, _: &Ceiling) -> bool {
        self.pc < 3
    }
    fn done(&self, _: &Ceiling) -> bool {
        self.pc == 3
    }
    fn step(&mut self, w: &mut Ceiling) -> Result<(), String> {
        match self.pc {
            0 => self.pc = if w.plan.release() == Released::Idle { 1 } else { 3 },
            1 => self.pc = if w.waiters > 0 { 2 } else { 3 },
            _ => {
                w.epoch += 1;
                self.pc = 3;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "releaser"
    }
}

/// The miss. `registers` is the fixed protocol: the first time it finds nothing to do it
/// registers as a waiter and looks once more before it sleeps; before the fix it went
/// straight to `wait_for_change`, which registers only after the look.
struct Waiter {
    pc: u8,
    seen: u64,
    registers: bool,
    registered: bool,
}

impl Agent<Ceiling> for Waiter {
    fn ready(&self, w: &Ceiling) -> bool {
        match self.pc {
            0..=2 => true,
            // Asleep in the condvar until the epoch moves.
            3 => w.epoch != self.seen,
            _ => false,
        }
    }
    fn done(&self, _: &Ceiling) -> bool {
        self.pc == 4
    }
    fn step(&mut self, w: &mut Ceiling) -> Result<(), String> {
        match self.pc {
            // Top of the loop: `let epoch = dev.ceiling.epoch()`.
            0 => {
                self.seen = w.epoch;
                self.pc = 1;
            }
            // Under the pool lock: a free slot, else an idle plan to evict, else wait.
            1 => {
                if w.live == 0 {
                    w.live = 1;
                    w.served = true;
                    if self.registered {
                        w.waiters -= 1;
                    }
                    self.pc = 4;
                } else if w.cached && w.plan.leases() == 0 {
                    assert_eq!(w.plan.evict(), Evicted::Idle);
                    w.cached = false;
                    // The evictor destroys it; `ceiling.release()` bumps the epoch.
                    w.live -= 1;
                    w.epoch += 1;
                    self.pc = 0;
                } else if self.registers && !self.registered {
                    w.waiters += 1;
                    self.registered = true;
                    self.pc = 0;
                } else {
                    self.pc = 2;
                }
            }
            // `wait_for_change`: register under the lock, re-read the epoch.
            2 => {
                if w.epoch != self.seen {
                    self.pc = 0;
                } else {
                    w.waiters += 1;
                    self.pc = 3;
                }
            }
            _ => {
                w.waiters -= 1;
                self.pc = 0;
            }
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "waiter"
    }
}

fn wake_up(registers: bool) -> Result<Stats, Failure> {
    let setup = move || {
        let w = Ceiling { plan: LeaseState::new_leased(), cached: true, live: 1, epoch: 0, waiters: 0, served: false };
        let a: Agents<Ceiling> =
            vec![Box::new(Releaser { pc: 0 }), Box::new(Waiter { pc: 0, seen: 0, registers, registered: false })];
        (w, a)
    };
    let end = |w: &Ceiling| {
        if !w.served {
            return Err("the miss was not served".into());
        }
        if w.waiters != 0 {
            return Err(format!("{} waiters left registered", w.waiters));
        }
        Ok(())
    };
    explore(&setup, &end)
}

#[test]
fn a_miss_at_the_ceiling_is_woken_by_the_release_that_idles_a_plan() {
    wake_up(true).unwrap_or_else(|f| panic!("{f:?}"));
}

/// Before the fix: a release between the miss's look (plan leased) and its registration
/// saw no waiter, so it bumped nothing, and the miss slept until its timeout although the
/// plan was idle and evictable.
#[test]
fn the_old_wait_protocol_loses_a_wake_up_and_is_caught() {
    let f = wake_up(false).expect_err("the old protocol loses the wake-up");
    assert!(f.what.contains("deadlock: waiter"), "{f:?}");
}

// ---------------------------------------------------------------------------------------
// The slots themselves (`LiveCeiling::try_acquire` / `release`), on the real type.
// ---------------------------------------------------------------------------------------

struct Slots {
    ceiling: LiveCeiling,
    held: usize,
}

struct Taker {
    pc: u8,
    rounds: u8,
}

impl Agent<Slots> for Taker {
    fn ready(&self, _: &Slots) -> bool {
        self.pc < 2
    }
    fn done(&self, _: &Slots) -> bool {
        self.pc == 2
    }
    fn step(&mut self, w: &mut Slots) -> Result<(), String> {
        if self.pc == 0 {
            if w.ceiling.try_acquire() {
                w.held += 1;
                self.pc = 1;
            } else {
                self.pc = 2;
            }
        } else {
            w.held -= 1;
            w.ceiling.release();
            self.rounds -= 1;
            self.pc = if self.rounds == 0 { 2 } else { 0 };
        }
        if w.ceiling.live() > w.ceiling.limit() || w.ceiling.live() != w.held {
            return Err(format!("{} live, {} held, limit {}", w.ceiling.live(), w.held, w.ceiling.limit()));
        }
        Ok(())
    }
    fn name(&self) -> &'static str {
        "taker"
    }
}

#[test]
fn the_ceiling_never_hands_out_more_slots_than_its_limit() {
    let setup = || {
        let w = Slots { ceiling: LiveCeiling::with_limit(2), held: 0 };
        let a: Agents<Slots> = (0..3).map(|_| Box::new(Taker { pc: 0, rounds: 2 }) as Box<dyn Agent<Slots>>).collect();
        (w, a)
    };
    let end = |w: &Slots| if w.ceiling.live() == 0 { Ok(()) } else { Err("slots left".into()) };
    let s = explore(&setup, &end).unwrap_or_else(|f| panic!("{f:?}"));
    assert!(s.schedules > 10, "{s:?}");
}
