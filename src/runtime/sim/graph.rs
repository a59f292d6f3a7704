//! Graphs: what a stream capture records, and what a host does with it afterwards (copy its
//! kernel nodes into graphs of its own, nest it as a child graph, clone it, instantiate it,
//! update an instantiation in place, launch it, destroy it), as the CUDA and HIP graph APIs
//! do.
//!
//! A captured transform becomes kernel nodes, one per dimension of its plan, each naming a
//! *function* and an *argument record* (`hipGraphKernelNodeGetParams`'s `func` and
//! `kernelParams`), which a host may copy into any graph. Functions belong to the plan that
//! made them (cuFFT loads its kernels per plan), or, with `SimConfig::shared_kernels`, to every
//! plan of one shape (rocFFT keeps compiled kernels per process); the argument record belongs
//! to the plan either way (it points at the plan's own device memory).
//!
//! What the pool must never let happen is recorded as a misuse and makes the values wrong, as
//! it does on a GPU: a launch that runs a kernel of a destroyed plan (its output is
//! poisoned), and an instantiation made or updated in place while it holds such a kernel
//! (MLX's graph cache does this on CUDA, which then runs freed code).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::fft::{self, Buffers, FftCache};
use super::plan::PlanRecord;
use super::stream::Node;
use super::violations::Violations;
use crate::desc::{Direction, PlanDesc};

/// A kernel node's parameters: the function it runs and its argument record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SimKernel {
    /// The function (`hipGraphKernelNodeGetParams`'s `func`).
    pub function: u64,
    /// The argument record (`kernelParams`).
    pub args: u64,
}

/// What a graph node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimNodeKind {
    /// A kernel ([`SimKernel`]).
    Kernel,
    /// A child graph, embedded (a deep copy made when the node was added).
    Graph,
    /// A host function.
    Host,
    /// A memory copy.
    Copy,
    /// Nothing (a dependency point).
    Empty,
}

/// An active capture, as `hipStreamGetCaptureInfo_v2` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimCapture {
    /// The capture's id, unique in the process.
    pub id: u64,
    /// The graph being captured into.
    pub graph: u64,
    /// The nodes the next captured work will depend on.
    pub tail: Vec<u64>,
}

/// One transform's kernels: where its argument records point.
pub(crate) struct KernelArgs {
    /// Weak: a destroyed plan's record goes, and a run then finds it gone.
    pub plan: Weak<PlanRecord>,
    pub desc: PlanDesc,
    pub direction: Direction,
    pub bufs: Buffers,
    pub output_bytes: usize,
    /// This record's kernel computes the transform (the last of the plan's kernels); the
    /// others only read the plan's memory.
    pub computes: bool,
}

struct Function {
    /// The plans whose kernel this is (one, or every plan of a shape with shared kernels).
    plans: Vec<Weak<PlanRecord>>,
}

fn gone(p: &Weak<PlanRecord>) -> bool {
    p.upgrade().is_none_or(|p| p.is_destroyed())
}

impl Function {
    /// The code is gone once every plan that loaded it is.
    fn unloaded(&self) -> bool {
        self.plans.iter().all(gone)
    }
}

#[derive(Clone)]
enum Body {
    Kernel(SimKernel),
    Child(u64),
    Host(Node),
    Copy(Node),
    Empty,
}

struct NodeRec {
    graph: u64,
    deps: Vec<u64>,
    body: Body,
}

#[derive(Default)]
struct Graph {
    nodes: Vec<u64>,
    /// The child node that owns this graph (an embedded graph dies with its node's graph).
    owner: Option<u64>,
}

/// An instantiated node: what a launch runs.
#[derive(Clone)]
enum Run {
    Kernel { kernel: SimKernel, function: Arc<Function>, args: Arc<KernelArgs> },
    Node(Node),
    Graph(Arc<Vec<Run>>),
    Empty,
}

struct Exec {
    runs: Arc<Vec<Run>>,
    /// The source graph's top-level nodes, in order: an exec node is named by its source.
    origin: Vec<u64>,
}

/// Every graph, node, instantiation, function and argument record of one sim.
pub(crate) struct Graphs {
    inner: Mutex<Table>,
    log: Arc<Violations>,
    fft: Arc<FftCache>,
}

#[derive(Default)]
struct Table {
    next: u64,
    graphs: HashMap<u64, Graph>,
    nodes: HashMap<u64, NodeRec>,
    execs: HashMap<u64, Exec>,
    functions: HashMap<u64, Arc<Function>>,
    /// Shared kernels: the functions of each shape (transform, lengths, kernel).
    by_shape: HashMap<(crate::desc::TransformType, Vec<i64>, usize), u64>,
    args: HashMap<u64, Arc<KernelArgs>>,
}

impl Table {
    fn id(&mut self) -> u64 {
        self.next += 1;
        // Handles that look like pointers and never collide with small integers.
        0x5100_0000 + self.next * 16
    }

    fn graph(&self, g: u64) -> Result<&Graph, String> {
        self.graphs.get(&g).ok_or_else(|| format!("graph {g:#x} is not a live graph"))
    }

    fn node(&self, n: u64) -> Result<&NodeRec, String> {
        self.nodes.get(&n).ok_or_else(|| format!("node {n:#x} is not a live node"))
    }

    fn add_node(&mut self, g: u64, deps: &[u64], body: Body) -> Result<u64, String> {
        self.graph(g)?;
        for d in deps {
            if self.node(*d)?.graph != g {
                return Err(format!("dependency {d:#x} is not a node of graph {g:#x}"));
            }
        }
        let n = self.id();
        self.nodes.insert(n, NodeRec { graph: g, deps: deps.to_vec(), body });
        self.graphs.get_mut(&g).expect("checked").nodes.push(n);
        Ok(n)
    }

    /// A deep copy of `g` (its nodes, embedded graphs, dependencies), owned by `owner`.
    fn clone_graph(&mut self, g: u64, owner: Option<u64>) -> Result<u64, String> {
        let nodes = self.graph(g)?.nodes.clone();
        let copy = self.id();
        self.graphs.insert(copy, Graph { nodes: Vec::new(), owner });
        let mut map = HashMap::new();
        for n in nodes {
            let rec = self.node(n)?;
            let (deps, body) = (rec.deps.clone(), rec.body.clone());
            let id = self.id();
            let body = match body {
                Body::Child(c) => Body::Child(self.clone_graph(c, Some(id))?),
                b => b,
            };
            let deps = deps.iter().map(|d| map[d]).collect();
            self.nodes.insert(id, NodeRec { graph: copy, deps, body });
            self.graphs.get_mut(&copy).expect("made above").nodes.push(id);
            map.insert(n, id);
        }
        Ok(copy)
    }

    fn destroy_graph(&mut self, g: u64) {
        if let Some(graph) = self.graphs.remove(&g) {
            for n in graph.nodes {
                if let Some(NodeRec { body: Body::Child(c), .. }) = self.nodes.remove(&n) {
                    self.destroy_graph(c);
                }
            }
        }
    }

    /// What a launch of `g` runs; a kernel naming an unknown function or record is refused.
    fn runs(&self, g: u64) -> Result<Vec<Run>, String> {
        let mut out = Vec::new();
        for n in &self.graph(g)?.nodes {
            out.push(match &self.node(*n)?.body {
                Body::Kernel(k) => self.resolve(*k)?,
                Body::Child(c) => Run::Graph(Arc::new(self.runs(*c)?)),
                Body::Host(f) | Body::Copy(f) => Run::Node(f.clone()),
                Body::Empty => Run::Empty,
            });
        }
        Ok(out)
    }

    fn resolve(&self, k: SimKernel) -> Result<Run, String> {
        let function = self.functions.get(&k.function).ok_or_else(|| format!("function {:#x} is not a kernel", k.function))?;
        let args = self.args.get(&k.args).ok_or_else(|| format!("{:#x} is not a kernel argument record", k.args))?;
        Ok(Run::Kernel { kernel: k, function: function.clone(), args: args.clone() })
    }
}

/// The shape of a graph's runs, as an update compares them (kinds, in order, nested).
fn topology(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| match r {
            Run::Kernel { .. } => "K".to_string(),
            Run::Node(_) => "N".to_string(),
            Run::Graph(g) => format!("({})", topology(g)),
            Run::Empty => "E".to_string(),
        })
        .collect()
}

/// The destroyed plans whose kernels `runs` hold (by function or argument record).
fn destroyed_plans(runs: &[Run], out: &mut Vec<String>) {
    for r in runs {
        match r {
            Run::Kernel { kernel, function, args } if gone(&args.plan) || function.unloaded() => {
                out.push(format!("kernel {:#x} of destroyed plan {}", kernel.function, args.desc));
            }
            Run::Graph(g) => destroyed_plans(g, out),
            _ => {}
        }
    }
}

fn run_all(runs: &[Run], log: &Violations, cache: &FftCache) {
    for r in runs {
        match r {
            Run::Kernel { kernel, function, args } => run_kernel(*kernel, function, args, log, cache),
            Run::Node(f) => f(),
            Run::Graph(g) => run_all(g, log, cache),
            Run::Empty => {}
        }
    }
}

fn run_kernel(kernel: SimKernel, function: &Function, args: &KernelArgs, log: &Violations, cache: &FftCache) {
    // The function's code (per plan) or the plan memory its arguments point at is gone: on
    // a GPU an illegal instruction, a fault, or another transform's numbers.
    let plan = args.plan.upgrade().filter(|p| !p.is_destroyed());
    let Some(plan) = plan.filter(|_| !function.unloaded()) else {
        log.record(format!(
            "a graph ran kernel {:#x} of plan {} after the plan was destroyed",
            kernel.function, args.desc
        ));
        // SAFETY: the output is sim memory of `output_bytes` bytes, checked when the
        // transform was captured; the sim never frees memory a plan's record points at
        // while the record lives (this run holds it).
        unsafe { std::ptr::write_bytes(args.bufs.output as *mut u8, 0xff, args.output_bytes) };
        return;
    };
    if args.computes {
        plan.pending.begin();
        fft::execute(&args.desc, args.direction, args.bufs, cache);
        plan.pending.finish();
    }
}

impl Graphs {
    pub(crate) fn new(log: Arc<Violations>, fft: Arc<FftCache>) -> Graphs {
        Graphs { inner: Mutex::new(Table::default()), log, fft }
    }

    /// The functions of a new plan's kernels: fresh ones, or its shape's with shared kernels.
    pub(crate) fn plan_functions(&self, plan: &Arc<PlanRecord>, shared: bool) -> Vec<u64> {
        let mut t = self.inner.lock();
        let kernels = plan.desc.rank().max(1);
        (0..kernels)
            .map(|k| {
                if shared {
                    let shape = (plan.desc.transform, plan.desc.dims().to_vec(), k);
                    if let Some(&f) = t.by_shape.get(&shape) {
                        let mut rec = Function { plans: t.functions[&f].plans.clone() };
                        rec.plans.retain(|p| p.strong_count() > 0);
                        rec.plans.push(Arc::downgrade(plan));
                        t.functions.insert(f, Arc::new(rec));
                        return f;
                    }
                }
                let f = t.id();
                t.functions.insert(f, Arc::new(Function { plans: vec![Arc::downgrade(plan)] }));
                if shared {
                    t.by_shape.insert((plan.desc.transform, plan.desc.dims().to_vec(), k), f);
                }
                f
            })
            .collect()
    }

    /// A new, empty graph (`hipGraphCreate`).
    pub(crate) fn create(&self) -> u64 {
        let mut t = self.inner.lock();
        let g = t.id();
        t.graphs.insert(g, Graph::default());
        g
    }

    /// Appends a transform's kernels to graph `g` after `deps` (a capture's tail); returns
    /// the new tail.
    pub(crate) fn add_transform(&self, g: u64, deps: &[u64], functions: &[u64], args: KernelArgs) -> Result<Vec<u64>, String> {
        let mut t = self.inner.lock();
        let mut tail = deps.to_vec();
        let last = functions.len().saturating_sub(1);
        let args = Arc::new(args);
        for (i, f) in functions.iter().enumerate() {
            let record = t.id();
            let a = KernelArgs {
                plan: args.plan.clone(),
                desc: args.desc,
                direction: args.direction,
                bufs: args.bufs,
                output_bytes: args.output_bytes,
                computes: i == last,
            };
            t.args.insert(record, Arc::new(a));
            let n = t.add_node(g, &tail, Body::Kernel(SimKernel { function: *f, args: record }))?;
            tail = vec![n];
        }
        Ok(tail)
    }

    /// Appends a host function or copy (`Copy` true) to graph `g` after `deps`.
    pub(crate) fn add_closure(&self, g: u64, deps: &[u64], f: Node, copy: bool) -> Result<Vec<u64>, String> {
        let body = if copy { Body::Copy(f) } else { Body::Host(f) };
        Ok(vec![self.inner.lock().add_node(g, deps, body)?])
    }

    pub(crate) fn add_kernel(&self, g: u64, deps: &[u64], k: SimKernel) -> Result<u64, String> {
        let mut t = self.inner.lock();
        t.resolve(k)?;
        t.add_node(g, deps, Body::Kernel(k))
    }

    pub(crate) fn add_child(&self, g: u64, deps: &[u64], child: u64) -> Result<u64, String> {
        let mut t = self.inner.lock();
        t.graph(g)?;
        t.graph(child)?;
        let n = t.add_node(g, deps, Body::Empty)?;
        let copy = t.clone_graph(child, Some(n))?;
        t.nodes.get_mut(&n).expect("added above").body = Body::Child(copy);
        Ok(n)
    }

    pub(crate) fn add_empty(&self, g: u64, deps: &[u64]) -> Result<u64, String> {
        self.inner.lock().add_node(g, deps, Body::Empty)
    }

    pub(crate) fn clone_graph(&self, g: u64) -> Result<u64, String> {
        self.inner.lock().clone_graph(g, None)
    }

    pub(crate) fn destroy(&self, g: u64) -> Result<(), String> {
        let mut t = self.inner.lock();
        if t.graph(g)?.owner.is_some() {
            return Err(format!("graph {g:#x} belongs to a child graph node and dies with it"));
        }
        t.destroy_graph(g);
        Ok(())
    }

    pub(crate) fn nodes(&self, g: u64) -> Result<Vec<u64>, String> {
        Ok(self.inner.lock().graph(g)?.nodes.clone())
    }

    pub(crate) fn kind(&self, n: u64) -> Result<SimNodeKind, String> {
        Ok(match self.inner.lock().node(n)?.body {
            Body::Kernel(_) => SimNodeKind::Kernel,
            Body::Child(_) => SimNodeKind::Graph,
            Body::Host(_) => SimNodeKind::Host,
            Body::Copy(_) => SimNodeKind::Copy,
            Body::Empty => SimNodeKind::Empty,
        })
    }

    pub(crate) fn deps(&self, n: u64) -> Result<Vec<u64>, String> {
        Ok(self.inner.lock().node(n)?.deps.clone())
    }

    pub(crate) fn kernel(&self, n: u64) -> Result<SimKernel, String> {
        match self.inner.lock().node(n)?.body {
            Body::Kernel(k) => Ok(k),
            _ => Err(format!("node {n:#x} is not a kernel node")),
        }
    }

    pub(crate) fn set_kernel(&self, n: u64, k: SimKernel) -> Result<(), String> {
        let mut t = self.inner.lock();
        t.resolve(k)?;
        match &mut t.nodes.get_mut(&n).ok_or_else(|| format!("node {n:#x} is not a live node"))?.body {
            Body::Kernel(old) => {
                *old = k;
                Ok(())
            }
            _ => Err(format!("node {n:#x} is not a kernel node")),
        }
    }

    pub(crate) fn child(&self, n: u64) -> Result<u64, String> {
        match self.inner.lock().node(n)?.body {
            Body::Child(c) => Ok(c),
            _ => Err(format!("node {n:#x} is not a child graph node")),
        }
    }

    /// `hipGraphInstantiate`: a graph holding a destroyed plan's kernel is a misuse.
    pub(crate) fn instantiate(&self, g: u64) -> Result<u64, String> {
        let mut t = self.inner.lock();
        let runs = t.runs(g)?;
        let mut dead = Vec::new();
        destroyed_plans(&runs, &mut dead);
        for d in dead {
            self.log.record(format!("graph {g:#x} instantiated holding {d}"));
        }
        let origin = t.graph(g)?.nodes.clone();
        let e = t.id();
        t.execs.insert(e, Exec { runs: Arc::new(runs), origin });
        Ok(e)
    }

    /// `hipGraphExecUpdate`: `Ok(false)` (the instantiation unchanged) when the topologies
    /// differ. Updating an instantiation that holds a destroyed plan's kernel is a misuse.
    pub(crate) fn update(&self, e: u64, g: u64) -> Result<bool, String> {
        let mut t = self.inner.lock();
        let runs = t.runs(g)?;
        let origin = t.graph(g)?.nodes.clone();
        let exec = t.execs.get_mut(&e).ok_or_else(|| format!("{e:#x} is not a live instantiated graph"))?;
        if topology(&exec.runs) != topology(&runs) {
            return Ok(false);
        }
        let mut dead = Vec::new();
        destroyed_plans(&exec.runs, &mut dead);
        for d in dead {
            self.log.record(format!("instantiated graph {e:#x} updated in place while it held {d}"));
        }
        *exec = Exec { runs: Arc::new(runs), origin };
        Ok(true)
    }

    /// `hipGraphExecKernelNodeSetParams`: the kernel of the node that `node` (of the graph
    /// `e` was made from) became.
    pub(crate) fn exec_set_kernel(&self, e: u64, node: u64, k: SimKernel) -> Result<(), String> {
        let mut t = self.inner.lock();
        let run = t.resolve(k)?;
        let exec = t.execs.get_mut(&e).ok_or_else(|| format!("{e:#x} is not a live instantiated graph"))?;
        let i = exec.origin.iter().position(|n| *n == node).ok_or_else(|| format!("node {node:#x} is not in {e:#x}"))?;
        let mut runs = (*exec.runs).clone();
        if !matches!(runs[i], Run::Kernel { .. }) {
            return Err(format!("node {node:#x} is not a kernel node"));
        }
        runs[i] = run;
        exec.runs = Arc::new(runs);
        Ok(())
    }

    /// What a launch of `e` runs, as one job for its stream.
    pub(crate) fn launch_job(&self, e: u64) -> Result<Box<dyn FnOnce() + Send>, String> {
        let runs = self.inner.lock().execs.get(&e).ok_or_else(|| format!("{e:#x} is not a live instantiated graph"))?.runs.clone();
        let (log, cache) = (self.log.clone(), self.fft.clone());
        Ok(Box::new(move || run_all(&runs, &log, &cache)))
    }

    pub(crate) fn destroy_exec(&self, e: u64) -> Result<(), String> {
        self.inner.lock().execs.remove(&e).map(drop).ok_or_else(|| format!("{e:#x} is not a live instantiated graph"))
    }

    /// Graphs (not embedded ones) and instantiations alive.
    pub(crate) fn live(&self) -> (usize, usize) {
        let t = self.inner.lock();
        (t.graphs.values().filter(|g| g.owner.is_none()).count(), t.execs.len())
    }
}
