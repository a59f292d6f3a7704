//! Which graphs can still run which plans: the bookkeeping behind "a plan is destroyed only
//! when no graph that holds its kernels can run again".
//!
//! A plan enters when a captured execution of it is recorded ([`Registry::captured`]): the
//! capture's graph holds it, and the kernel functions the execution added are remembered as
//! the plan's. From then on every graph call the hooks see moves holdings along the way the
//! runtime moves nodes:
//!
//! | call | what holds the plan afterwards |
//! |---|---|
//! | capture ends (failed: its graph is gone) | the returned graph (nothing) |
//! | clone, child graph node | the new graph / the parent (and its owners, for an embedded graph) |
//! | kernel node added or set with one of the plan's functions | that graph (an unknown node's graph: held for good) |
//! | instantiate | the instantiation |
//! | update in place (failed) | the instantiation holds the new graph's plans instead (both) |
//! | kernel or child node set on an instantiation | the instantiation, besides what it held |
//! | launch into a capture | the capture's graph, besides the instantiation |
//! | graph or instantiation destroyed | nothing of it |
//!
//! Each plan's *pin* (a standing lease, in the engine) is held while at least one graph or
//! instantiation holds it; when the last lets go it comes back as [`Released`] with the
//! streams the instantiations that held it were last launched on, whose work must finish
//! before the plan may be destroyed. Where the hooks cannot tell what a call did (a kernel
//! set on a node never seen, an instantiation launched from the device), the plans involved
//! are held for the process's life instead: wrong in the safe direction only.
//!
//! Nothing here calls a GPU runtime: the caller settles what comes back, outside the lock.

use rustc_hash::{FxHashMap, FxHashSet};

use hipfft_pool::RawStream;

/// A plan, by its library handle (unique in the process while it lives, which is as long as
/// it is pinned here).
pub type PlanKey = usize;

/// A pin whose last holder let go, and the streams whose work (launches of instantiations
/// that held it) must complete before the plan is free.
#[derive(Debug)]
pub struct Released<P> {
    pub pin: P,
    pub waits: Vec<RawStream>,
}

struct Pin<P> {
    pin: P,
    /// Graphs and instantiations holding the plan.
    holders: usize,
    /// Kernel identities its captured executions added (`func`, or `kern`, of their nodes).
    functions: FxHashSet<usize>,
    /// Streams of launches of instantiations that held it and let go since.
    waits: Vec<RawStream>,
    /// Held for the process's life: some call on it could not be followed.
    forever: bool,
}

#[derive(Default)]
struct Holder {
    plans: FxHashSet<PlanKey>,
    /// Nodes of this graph the hooks saw made (so that a later set on them finds it).
    nodes: Vec<usize>,
    /// Embedded graphs of its child nodes that a host asked for (they die with it).
    embedded: Vec<usize>,
}

#[derive(Default)]
struct ExecHolder {
    plans: FxHashSet<PlanKey>,
    last_stream: Option<RawStream>,
    /// Instantiated for launches from the device, which no hook sees.
    device_launch: bool,
}

struct State<P> {
    pins: FxHashMap<PlanKey, Pin<P>>,
    functions: FxHashMap<usize, Vec<PlanKey>>,
    graphs: FxHashMap<usize, Holder>,
    execs: FxHashMap<usize, ExecHolder>,
    /// Node → the graph it was added to (nodes the hooks saw made).
    nodes: FxHashMap<usize, usize>,
    /// Embedded graph → the graph whose child node owns it.
    owners: FxHashMap<usize, usize>,
    /// Capture id → its graph, for captures that hold plans.
    captures: FxHashMap<u64, usize>,
}

impl<P> Default for State<P> {
    fn default() -> Self {
        State {
            pins: FxHashMap::default(),
            functions: FxHashMap::default(),
            graphs: FxHashMap::default(),
            execs: FxHashMap::default(),
            nodes: FxHashMap::default(),
            owners: FxHashMap::default(),
            captures: FxHashMap::default(),
        }
    }
}

/// Counts for messages and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Holdings {
    /// Plans pinned.
    pub plans: usize,
    /// Of those, held for the process's life.
    pub forever: usize,
    /// Graphs (being captured, or made) holding plans.
    pub graphs: usize,
    /// Instantiated graphs holding plans.
    pub execs: usize,
}

/// The registry (see the module's comment). `P` is what holds a plan: a standing lease in
/// the engine, anything in the tests.
pub struct Registry<P> {
    state: parking_lot::Mutex<State<P>>,
    /// Plans pinned right now: zero means no graph call needs the lock.
    pinned: std::sync::atomic::AtomicUsize,
}

impl<P> Default for Registry<P> {
    fn default() -> Self {
        Registry { state: parking_lot::Mutex::new(State::default()), pinned: std::sync::atomic::AtomicUsize::new(0) }
    }
}

type Out<P> = Vec<Released<P>>;

impl<P> State<P> {
    /// `plan` is held by one more graph or instantiation (it is pinned).
    fn hold(&mut self, plan: PlanKey) {
        if let Some(p) = self.pins.get_mut(&plan) {
            p.holders += 1;
        }
    }

    /// One holder of `plan` let go, after launches on `wait` if any.
    fn let_go(&mut self, plan: PlanKey, wait: Option<RawStream>, out: &mut Out<P>) {
        let Some(p) = self.pins.get_mut(&plan) else { return };
        p.holders -= 1;
        if let Some(s) = wait {
            if !p.waits.contains(&s) {
                p.waits.push(s);
            }
        }
        if p.holders > 0 || p.forever {
            return;
        }
        let p = self.pins.remove(&plan).expect("found above");
        for f in &p.functions {
            if let Some(plans) = self.functions.get_mut(f) {
                plans.retain(|k| *k != plan);
                if plans.is_empty() {
                    self.functions.remove(f);
                }
            }
        }
        out.push(Released { pin: p.pin, waits: p.waits });
    }

    /// Adds `plans` to graph `g` and to the graphs that own it, each holding each at most once.
    fn add_to_graph(&mut self, g: usize, plans: &[PlanKey]) {
        let mut at = Some(g);
        let mut seen = 0;
        while let Some(g) = at {
            let h = self.graphs.entry(g).or_default();
            let new: Vec<PlanKey> = plans.iter().copied().filter(|p| h.plans.insert(*p)).collect();
            for p in new {
                self.hold(p);
            }
            at = self.owners.get(&g).copied();
            seen += 1;
            if seen > 64 {
                // Owners nested deeper than any real host makes them (or a loop from reused
                // handles): hold for good rather than follow further.
                self.keep_forever(plans);
                break;
            }
        }
    }

    fn add_to_exec(&mut self, e: usize, plans: &[PlanKey]) {
        let h = self.execs.entry(e).or_default();
        let new: Vec<PlanKey> = plans.iter().copied().filter(|p| h.plans.insert(*p)).collect();
        for p in new {
            self.hold(p);
        }
    }

    fn graph_plans(&self, g: usize) -> Vec<PlanKey> {
        self.graphs.get(&g).map(|h| h.plans.iter().copied().collect()).unwrap_or_default()
    }

    fn plans_of(&self, functions: &[usize]) -> Vec<PlanKey> {
        let mut out: Vec<PlanKey> = functions.iter().filter_map(|f| self.functions.get(f)).flatten().copied().collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    fn keep_forever(&mut self, plans: &[PlanKey]) {
        for p in plans {
            if let Some(pin) = self.pins.get_mut(p) {
                pin.forever = true;
            }
        }
    }

    fn drop_graph(&mut self, g: usize, out: &mut Out<P>) {
        let Some(h) = self.graphs.remove(&g) else { return };
        for n in h.nodes {
            self.nodes.remove(&n);
        }
        for e in h.embedded {
            self.owners.remove(&e);
            self.drop_graph(e, out);
        }
        for p in h.plans {
            self.let_go(p, None, out);
        }
    }
}

impl<P> Registry<P> {
    /// Whether no plan is pinned: graph calls then need nothing from here.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pinned.load(std::sync::atomic::Ordering::Acquire) == 0
    }

    fn with(&self, f: impl FnOnce(&mut State<P>, &mut Out<P>)) -> Out<P> {
        let mut out = Vec::new();
        let mut s = self.state.lock();
        f(&mut s, &mut out);
        self.pinned.store(s.pins.len(), std::sync::atomic::Ordering::Release);
        out
    }

    /// A captured execution of `plan` was recorded into `graph` by capture `capture`,
    /// adding kernels of `functions`. `pin` holds the plan from now on; if the plan was
    /// pinned already, `pin` comes back (`Some`) for the caller to release at once.
    pub fn captured(&self, plan: PlanKey, pin: P, capture: u64, graph: usize, functions: &[usize]) -> Option<P> {
        let mut back = None;
        self.with(|s, _| {
            match s.pins.get_mut(&plan) {
                Some(p) => {
                    p.functions.extend(functions.iter().copied());
                    back = Some(pin);
                }
                None => {
                    s.pins.insert(
                        plan,
                        Pin { pin, holders: 0, functions: functions.iter().copied().collect(), waits: Vec::new(), forever: false },
                    );
                }
            }
            for f in functions {
                let plans = s.functions.entry(*f).or_default();
                if !plans.contains(&plan) {
                    plans.push(plan);
                }
            }
            s.captures.insert(capture, graph);
            s.add_to_graph(graph, &[plan]);
        });
        back
    }

    /// Whether a capture holding plans is in progress (its end must then be looked at).
    pub fn has_captures(&self) -> bool {
        !self.is_empty() && !self.state.lock().captures.is_empty()
    }

    /// Capture `capture` ended: `Some(graph)`, the graph it returned; `None`, it failed and
    /// its graph is gone.
    pub fn capture_ended(&self, capture: u64, graph: Option<usize>) -> Out<P> {
        self.with(|s, out| {
            let Some(g) = s.captures.remove(&capture) else { return };
            match graph {
                Some(r) if r == g => {}
                Some(r) => {
                    // Not the graph the capture reported while it ran: the returned one holds
                    // what it held.
                    let plans = s.graph_plans(g);
                    s.add_to_graph(r, &plans);
                    s.drop_graph(g, out);
                }
                None => s.drop_graph(g, out),
            }
        })
    }

    /// `graph` was destroyed.
    pub fn graph_destroyed(&self, graph: usize) -> Out<P> {
        self.with(|s, out| {
            s.owners.remove(&graph);
            s.drop_graph(graph, out)
        })
    }

    /// `copy` was made as a clone of `source`.
    pub fn graph_cloned(&self, source: usize, copy: usize) -> Out<P> {
        self.with(|s, _| {
            let plans = s.graph_plans(source);
            if !plans.is_empty() {
                s.add_to_graph(copy, &plans);
            }
        })
    }

    /// A child graph node `node` embedding a copy of `child` was added to `parent`.
    pub fn child_added(&self, parent: usize, node: usize, child: usize) -> Out<P> {
        self.with(|s, _| {
            let plans = s.graph_plans(child);
            if !plans.is_empty() {
                s.add_to_graph(parent, &plans);
                s.graphs.entry(parent).or_default().nodes.push(node);
                s.nodes.insert(node, parent);
            }
        })
    }

    /// A host asked for the graph a child node embeds: what is added to it is added to the
    /// node's graph too. An unknown node's graph is watched for good.
    pub fn embedded(&self, node: usize, embedded: usize) -> Out<P> {
        self.with(|s, _| {
            match s.nodes.get(&node).copied() {
                Some(parent) => {
                    s.owners.insert(embedded, parent);
                    s.graphs.entry(parent).or_default().embedded.push(embedded);
                }
                // A child node the hooks never saw made holds no plan they know of; what is
                // added to its graph later has no owner to reach: held for good then.
                None => {
                    s.owners.remove(&embedded);
                }
            }
        })
    }

    /// `graph` owns `body` (a conditional node's body graph).
    pub fn owned_by(&self, graph: usize, body: usize) -> Out<P> {
        self.with(|s, _| {
            s.owners.insert(body, graph);
            s.graphs.entry(graph).or_default().embedded.push(body);
        })
    }

    /// A kernel node `node` of `functions` was added to `graph`.
    pub fn kernel_added(&self, graph: usize, node: usize, functions: &[usize]) -> Out<P> {
        self.with(|s, _| {
            let plans = s.plans_of(functions);
            if plans.is_empty() {
                return;
            }
            s.add_to_graph(graph, &plans);
            s.graphs.entry(graph).or_default().nodes.push(node);
            s.nodes.insert(node, graph);
        })
    }

    /// A kernel node's parameters were set to `functions` (the node's old kernel stays
    /// counted: a set never lets a plan go).
    pub fn kernel_set(&self, node: usize, functions: &[usize]) -> Out<P> {
        self.with(|s, _| {
            let plans = s.plans_of(functions);
            if plans.is_empty() {
                return;
            }
            match s.nodes.get(&node).copied() {
                Some(g) => s.add_to_graph(g, &plans),
                None => s.keep_forever(&plans),
            }
        })
    }

    /// A kernel node of instantiation `exec` was set to `functions`.
    pub fn exec_kernel_set(&self, exec: usize, functions: &[usize]) -> Out<P> {
        self.with(|s, _| {
            let plans = s.plans_of(functions);
            if !plans.is_empty() {
                s.add_to_exec(exec, &plans);
            }
        })
    }

    /// A child node of instantiation `exec` was set to embed `child`.
    pub fn exec_child_set(&self, exec: usize, child: usize) -> Out<P> {
        self.with(|s, _| {
            let plans = s.graph_plans(child);
            if !plans.is_empty() {
                s.add_to_exec(exec, &plans);
            }
        })
    }

    /// `exec` was instantiated from `graph` (`device_launch`: for launches from the device).
    pub fn instantiated(&self, exec: usize, graph: usize, device_launch: bool) -> Out<P> {
        self.with(|s, out| {
            // A handle of an instantiation destroyed unseen, reused: what it held goes.
            if let Some(old) = s.execs.remove(&exec) {
                for p in old.plans {
                    s.let_go(p, old.last_stream, out);
                }
            }
            let plans = s.graph_plans(graph);
            if plans.is_empty() {
                return;
            }
            s.add_to_exec(exec, &plans);
            let e = s.execs.get_mut(&exec).expect("added above");
            e.device_launch = device_launch;
            if device_launch {
                s.keep_forever(&plans);
            }
        })
    }

    /// `exec` was updated in place from `graph`; `ok` whether the update took.
    pub fn updated(&self, exec: usize, graph: usize, ok: bool) -> Out<P> {
        self.with(|s, out| {
            let plans = s.graph_plans(graph);
            if !ok {
                // A failed update may have changed part of it: it holds both.
                s.add_to_exec(exec, &plans);
                return;
            }
            let Some(e) = s.execs.get_mut(&exec) else {
                if !plans.is_empty() {
                    s.add_to_exec(exec, &plans);
                }
                return;
            };
            let keep: FxHashSet<PlanKey> = plans.iter().copied().collect();
            let gone: Vec<PlanKey> = e.plans.iter().copied().filter(|p| !keep.contains(p)).collect();
            let (last, device) = (e.last_stream, e.device_launch);
            for p in &gone {
                e.plans.remove(p);
            }
            s.add_to_exec(exec, &plans);
            if device {
                s.keep_forever(&plans);
            }
            for p in gone {
                s.let_go(p, last, out);
            }
            if s.execs.get(&exec).is_some_and(|e| e.plans.is_empty()) {
                s.execs.remove(&exec);
            }
        })
    }

    /// `exec` was launched on `stream`; `into_capture`: the stream was capturing into
    /// that graph, which now holds what `exec` holds.
    pub fn launched(&self, exec: usize, stream: RawStream, into_capture: Option<usize>) -> Out<P> {
        self.with(|s, _| {
            let Some(e) = s.execs.get_mut(&exec) else { return };
            match into_capture {
                Some(g) => {
                    let plans: Vec<PlanKey> = e.plans.iter().copied().collect();
                    s.add_to_graph(g, &plans);
                }
                None => e.last_stream = Some(stream),
            }
        })
    }

    /// `exec` was destroyed.
    pub fn exec_destroyed(&self, exec: usize) -> Out<P> {
        self.with(|s, out| {
            if let Some(e) = s.execs.remove(&exec) {
                for p in e.plans {
                    s.let_go(p, e.last_stream, out);
                }
            }
        })
    }

    /// Every plan pinned now is held for good (a hook found a call it cannot follow).
    pub fn keep_all_forever(&self) {
        self.with(|s, _| {
            let all: Vec<PlanKey> = s.pins.keys().copied().collect();
            s.keep_forever(&all);
        });
    }

    /// What is pinned right now.
    pub fn holdings(&self) -> Holdings {
        self.holdings_until(None).expect("no deadline: the lock is waited for")
    }

    /// [`Registry::holdings`], or `None` if the lock stays held until `deadline`.
    pub fn holdings_until(&self, deadline: Option<std::time::Instant>) -> Option<Holdings> {
        let s = match deadline {
            None => self.state.lock(),
            Some(by) => self.state.try_lock_until(by)?,
        };
        Some(Holdings {
            plans: s.pins.len(),
            forever: s.pins.values().filter(|p| p.forever).count(),
            graphs: s.graphs.values().filter(|h| !h.plans.is_empty()).count(),
            execs: s.execs.values().filter(|h| !h.plans.is_empty()).count(),
        })
    }

    /// Lets go of everything (an engine of its own being dropped).
    pub fn clear(&self) -> Vec<P> {
        let mut s = self.state.lock();
        let pins = std::mem::take(&mut s.pins);
        *s = State::default();
        self.pinned.store(0, std::sync::atomic::Ordering::Release);
        pins.into_values().map(|p| p.pin).collect()
    }
}

#[cfg(test)]
mod tests;
