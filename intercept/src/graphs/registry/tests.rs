//! The registry against a model of what graphs really contain: random sequences of graph
//! calls (captures, copied kernels, child graphs, clones, instantiations, updates that take
//! or fail, launches, destroys), with, after every call, the two promises checked:
//! - never released early: a plan whose kernels some live graph or instantiation contains
//!   is still pinned, and a released plan's waits name every stream an instantiation that
//!   held it was launched on;
//! - nothing held for ever by mistake: once every graph and instantiation is destroyed,
//!   every plan not marked for good has been released.

use std::collections::{BTreeMap as HashMap, BTreeSet as HashSet};

use super::*;

/// A pin that says which plan it holds.
#[derive(Debug, PartialEq, Eq)]
struct TestPin(PlanKey);

/// xorshift64*: reproducible sequences without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> Option<T> {
        (!v.is_empty()).then(|| v[self.below(v.len())])
    }
}

/// A kernel as the runtime holds it: its function, and the plan its arguments point at.
type Kernel = (usize, PlanKey);

/// What the runtime really holds: each graph's and instantiation's kernels.
#[derive(Default)]
struct Model {
    graphs: HashMap<usize, Vec<(usize, Option<Kernel>)>>, // graph → (node, kernel)
    /// Instantiation → (its kernels, its last launch's stream, the plans it held at some
    /// launch). Launches of one instantiation run in order, so a plan it ran is free once
    /// its last launch is done.
    execs: HashMap<usize, (HashSet<Kernel>, Option<RawStream>)>,
    ran: HashMap<usize, HashSet<PlanKey>>,
    /// Plan → the functions of its kernels.
    plans: HashMap<PlanKey, Vec<usize>>,
    /// Plan → (instantiation, its launch) that ran it and let go since: the plan is free once
    /// that launch, or any later one of the same instantiation (they run in order), is done.
    owed: HashMap<PlanKey, Vec<(usize, usize)>>,
    /// Instantiation → the streams of its launches, in order.
    launches: HashMap<usize, Vec<RawStream>>,
    released: HashSet<PlanKey>,
    next: usize,
    /// The calls so far, for a failure's message.
    log: Vec<String>,
}

impl Model {
    fn id(&mut self) -> usize {
        self.next += 1;
        self.next * 8
    }

    fn graph_kernels(&self, g: usize) -> HashSet<Kernel> {
        self.graphs.get(&g).map(|n| n.iter().filter_map(|(_, k)| *k).collect()).unwrap_or_default()
    }

    fn all_kernels(&self) -> Vec<Kernel> {
        self.graphs.values().flatten().filter_map(|(_, k)| *k).collect()
    }

    fn holds(&self, plan: PlanKey, kernels: &HashSet<Kernel>) -> bool {
        kernels.iter().any(|(_, p)| *p == plan)
    }

    fn needed(&self, plan: PlanKey) -> bool {
        self.graphs.keys().any(|g| self.holds(plan, &self.graph_kernels(*g)))
            || self.execs.values().any(|(f, _)| self.holds(plan, f))
    }

    /// Instantiation `e`'s kernels change from `before` to `after`: plans it ran and no
    /// longer holds owe its last launch's stream.
    fn exec_changed(&mut self, e: usize, before: &HashSet<Kernel>, after: &HashSet<Kernel>, last: Option<RawStream>) {
        if last.is_none() {
            return;
        }
        let launch = self.launches[&e].len() - 1;
        let plans: Vec<PlanKey> = self.plans.keys().copied().collect();
        for p in plans {
            if self.holds(p, before) && !self.holds(p, after) && self.ran.get(&e).is_some_and(|r| r.contains(&p)) {
                self.owed.entry(p).or_default().push((e, launch));
            }
        }
    }

    /// Whether waiting for `waits` covers launch `launch` of `e`: some wait is the stream of
    /// that launch or of a later one of `e`.
    fn covered(&self, e: usize, launch: usize, waits: &[RawStream]) -> bool {
        self.launches[&e][launch..].iter().any(|s| waits.contains(s))
    }
}

fn settle(model: &mut Model, out: Vec<Released<TestPin>>) {
    for r in out {
        let p = r.pin.0;
        assert!(!model.needed(p), "plan {p} released while a live graph or instantiation holds its kernels; calls:\n{}", model.log.join("\n"));
        for (e, launch) in model.owed.get(&p).into_iter().flatten() {
            assert!(
                model.covered(*e, *launch, &r.waits),
                "plan {p} released without waiting for launch {launch} of {e} (waits {:?}); calls:\n{}",
                r.waits,
                model.log.join("\n")
            );
        }
        assert!(model.released.insert(p), "plan {p} released twice");
    }
}

fn run(seed: u64, steps: usize, shared: bool) {
    let reg: Registry<TestPin> = Registry::default();
    let mut m = Model::default();
    let mut rng = Rng(seed | 1);
    let mut capture_ids = 0u64;
    let streams = [RawStream(0x100), RawStream(0x200)];
    // Shared kernels: a small pool of functions every plan draws from.
    let shared_functions: Vec<usize> = (0..4).map(|i| 0x9000 + i * 8).collect();
    for _ in 0..steps {
        let graphs: Vec<usize> = m.graphs.keys().copied().collect();
        let execs: Vec<usize> = m.execs.keys().copied().collect();
        let out = match rng.below(13) {
            // A captured execution of a new plan (or one still pinned) into a new graph.
            0 | 1 => {
                let live: Vec<PlanKey> = m.plans.keys().copied().filter(|p| !m.released.contains(p)).collect();
                let plan = match rng.pick(&live) {
                    Some(p) if rng.below(3) == 0 => p,
                    _ => {
                        let p = m.id();
                        let fs = if shared {
                            vec![shared_functions[rng.below(shared_functions.len())]]
                        } else {
                            (0..1 + rng.below(2)).map(|_| m.id()).collect()
                        };
                        m.plans.insert(p, fs);
                        p
                    }
                };
                let g = m.id();
                capture_ids += 1;
                let fs = m.plans[&plan].clone();
                // Captured nodes: the runtime made them, the hooks never saw them made.
                let nodes = fs.iter().map(|f| (m.id(), Some((*f, plan)))).collect::<Vec<_>>();
                m.graphs.insert(g, nodes);
                m.log.push(format!("capture plan {plan} fns {fs:?} into graph {g}"));
                if let Some(back) = reg.captured(plan, TestPin(plan), capture_ids, g, &fs) {
                    assert_eq!(back.0, plan, "a second pin comes back");
                }
                // The capture ends: usually with its graph, sometimes failed.
                if rng.below(6) == 0 {
                    m.graphs.remove(&g);
                    m.log.push("  capture failed".into());
                    reg.capture_ended(capture_ids, None)
                } else {
                    reg.capture_ended(capture_ids, Some(g))
                }
            }
            // A kernel copied from some graph into another (or a new one).
            2 | 3 => {
                let (Some(src), Some(dst)) = (rng.pick(&graphs), rng.pick(&graphs)) else { continue };
                let kernels: Vec<Kernel> = m.graph_kernels(src).into_iter().collect();
                let Some(k) = rng.pick(&kernels) else { continue };
                let n = m.id();
                m.graphs.get_mut(&dst).unwrap().push((n, Some(k)));
                m.log.push(format!("add kernel {k:?} node {n} to graph {dst} (from {src})"));
                reg.kernel_added(dst, n, &[k.0])
            }
            // A child graph node (a deep copy), or a clone.
            4 => {
                let (Some(child), Some(parent)) = (rng.pick(&graphs), rng.pick(&graphs)) else { continue };
                if child == parent {
                    continue;
                }
                let n = m.id();
                let copied: Vec<(usize, Option<Kernel>)> = m.graphs[&child].iter().map(|(_, k)| (0, *k)).collect();
                m.graphs.get_mut(&parent).unwrap().extend(copied);
                m.graphs.get_mut(&parent).unwrap().push((n, None));
                m.log.push(format!("child {child} into {parent} node {n}"));
                reg.child_added(parent, n, child)
            }
            5 => {
                let Some(src) = rng.pick(&graphs) else { continue };
                let c = m.id();
                let copied = m.graphs[&src].iter().map(|(_, k)| (0, *k)).collect();
                m.graphs.insert(c, copied);
                m.log.push(format!("clone {src} -> {c}"));
                reg.graph_cloned(src, c)
            }
            // A node's kernel set to another function (the model replaces it).
            6 => {
                let Some(g) = rng.pick(&graphs) else { continue };
                let all = m.all_kernels();
                let Some(k) = rng.pick(&all) else { continue };
                let nodes: Vec<usize> = m.graphs[&g].iter().filter(|(n, k)| *n != 0 && k.is_some()).map(|(n, _)| *n).collect();
                let Some(node) = rng.pick(&nodes) else { continue };
                for (n, old) in m.graphs.get_mut(&g).unwrap() {
                    if *n == node {
                        *old = Some(k);
                    }
                }
                m.log.push(format!("set node {node} of {g} to {k:?}"));
                reg.kernel_set(node, &[k.0])
            }
            7 => {
                let Some(g) = rng.pick(&graphs) else { continue };
                let e = m.id();
                m.execs.insert(e, (m.graph_kernels(g), None));
                m.log.push(format!("instantiate {g} -> exec {e}"));
                reg.instantiated(e, g, false)
            }
            8 => {
                let (Some(e), Some(g)) = (rng.pick(&execs), rng.pick(&graphs)) else { continue };
                let ok = rng.below(4) != 0;
                if ok {
                    let after = m.graph_kernels(g);
                    let (before, last) = m.execs[&e].clone();
                    m.exec_changed(e, &before, &after, last);
                    m.execs.get_mut(&e).unwrap().0 = after;
                }
                m.log.push(format!("update exec {e} from {g} ok {ok}"));
                reg.updated(e, g, ok)
            }
            9 => {
                let Some(e) = rng.pick(&execs) else { continue };
                let s = streams[rng.below(2)];
                m.execs.get_mut(&e).unwrap().1 = Some(s);
                m.launches.entry(e).or_default().push(s);
                let held: Vec<PlanKey> = m.execs[&e].0.iter().map(|(_, p)| *p).collect();
                m.ran.entry(e).or_default().extend(held);
                m.log.push(format!("launch exec {e} on {s:?}"));
                reg.launched(e, s, None)
            }
            10 => {
                let Some(e) = rng.pick(&execs) else { continue };
                let all = m.all_kernels();
                let Some(k) = rng.pick(&all) else { continue };
                m.execs.get_mut(&e).unwrap().0.insert(k);
                m.log.push(format!("exec {e} set kernel {k:?}"));
                reg.exec_kernel_set(e, &[k.0])
            }
            11 => {
                let Some(g) = rng.pick(&graphs) else { continue };
                m.graphs.remove(&g);
                m.log.push(format!("destroy graph {g}"));
                reg.graph_destroyed(g)
            }
            _ => {
                let Some(e) = rng.pick(&execs) else { continue };
                let (before, last) = m.execs.remove(&e).unwrap();
                m.exec_changed(e, &before, &HashSet::new(), last);
                m.log.push(format!("destroy exec {e}"));
                reg.exec_destroyed(e)
            }
        };
        settle(&mut m, out);
        // Never released early: every plan a live graph or instantiation holds is pinned.
        for p in m.plans.keys() {
            if m.needed(*p) {
                assert!(!m.released.contains(p), "plan {p} was released but is still held (seed {seed})");
            }
        }
    }
    // Nothing held for ever by mistake: destroy everything, every plan comes back.
    let execs: Vec<usize> = m.execs.keys().copied().collect();
    for e in execs {
        let (before, last) = m.execs.remove(&e).unwrap();
        m.exec_changed(e, &before, &HashSet::new(), last);
        let out = reg.exec_destroyed(e);
        settle(&mut m, out);
    }
    let graphs: Vec<usize> = m.graphs.keys().copied().collect();
    for g in graphs {
        m.graphs.remove(&g);
        let out = reg.graph_destroyed(g);
        settle(&mut m, out);
    }
    let h = reg.holdings();
    assert_eq!(h.plans, h.forever, "plans held with no graph left (seed {seed}): {h:?}");
    assert!(reg.is_empty() || h.forever > 0);
}

#[test]
fn no_plan_is_released_while_a_graph_holds_it_and_every_plan_comes_back_per_plan_kernels() {
    let seeds: u64 = std::env::var("HFP_MODEL_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for steps in [10, 20, 40, 80, 300] {
        for seed in 1..seeds {
            run(seed * 7919 + steps as u64, steps, false);
        }
    }
}

#[test]
fn the_same_with_kernels_shared_by_plans_of_one_shape() {
    let seeds: u64 = std::env::var("HFP_MODEL_SEEDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    for steps in [10, 40, 300] {
        for seed in 1..seeds {
            run(seed * 104_729 + steps as u64, steps, true);
        }
    }
}

#[test]
fn a_kernel_set_on_a_node_never_seen_keeps_its_plans_for_good() {
    let reg: Registry<TestPin> = Registry::default();
    assert!(reg.captured(1, TestPin(1), 1, 0x10, &[0xf1]).is_none());
    reg.capture_ended(1, Some(0x10));
    assert!(reg.kernel_set(0x999, &[0xf1]).is_empty());
    assert!(reg.graph_destroyed(0x10).is_empty(), "held for good");
    assert_eq!(reg.holdings(), Holdings { plans: 1, forever: 1, graphs: 0, execs: 0 });
}

#[test]
fn an_instantiation_for_device_launches_keeps_its_plans_for_good() {
    let reg: Registry<TestPin> = Registry::default();
    reg.captured(1, TestPin(1), 1, 0x10, &[0xf1]);
    reg.capture_ended(1, Some(0x10));
    reg.instantiated(0x20, 0x10, true);
    reg.graph_destroyed(0x10);
    assert!(reg.exec_destroyed(0x20).is_empty(), "no hook sees a device launch: held for good");
    assert_eq!(reg.holdings().forever, 1);
}

#[test]
fn a_released_plan_waits_for_the_streams_its_instantiations_ran_on() {
    let reg: Registry<TestPin> = Registry::default();
    reg.captured(7, TestPin(7), 1, 0x10, &[0xf7]);
    reg.capture_ended(1, Some(0x10));
    reg.instantiated(0x20, 0x10, false);
    reg.launched(0x20, RawStream(0x55), None);
    assert!(reg.graph_destroyed(0x10).is_empty(), "the instantiation still holds it");
    let out = reg.exec_destroyed(0x20);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].pin.0, out[0].waits.clone()), (7, vec![RawStream(0x55)]));
    assert!(reg.is_empty());
}

#[test]
fn a_failed_capture_lets_its_plans_go_at_once() {
    let reg: Registry<TestPin> = Registry::default();
    reg.captured(3, TestPin(3), 9, 0x30, &[0xf3]);
    assert!(reg.has_captures());
    let out = reg.capture_ended(9, None);
    assert_eq!(out.len(), 1);
    assert!(out[0].waits.is_empty(), "nothing of it ever ran");
    assert!(!reg.has_captures());
}
