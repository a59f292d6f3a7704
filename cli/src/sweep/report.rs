//! The sweep's report: the table, the Markdown report with its observations, the plot, and
//! the checkpoint written after every configuration.

use super::*;

pub(super) fn table(results: &[ConfigResult]) -> String {
    let w = results.iter().map(|r| r.config.label.len()).max().unwrap_or(13).max(13);
    // The calls column grows with what it holds ("destroyx2" when two destroys block).
    let cw = results
        .iter()
        .flat_map(|r| r.runs.iter())
        .filter_map(|r| r.counts_at_stop.as_ref().map(|k| k.calls.chars().count()))
        .max()
        .unwrap_or(0)
        .max(7);
    let mut o = String::new();
    o.push_str(&format!("{:<w$}  run  result  {:<cw$}  {:<44}  live  peak  time\n", "configuration", "in call", "stopped at"));
    o.push_str(&format!("{}  ---  ------  {}  {}  ----  ----  -------\n", "-".repeat(w), "-".repeat(cw), "-".repeat(44)));
    for cr in results {
        if let Some(why) = &cr.rejected {
            o.push_str(&format!("{:<w$}  -    {why}\n", cr.config.label));
            continue;
        }
        for r in &cr.runs {
            let res = match r.outcome {
                Outcome::Pass => "pass",
                Outcome::Hang => "HANG",
                Outcome::Fail => "FAIL",
                Outcome::Error => "ERROR",
            };
            let at = match r.outcome {
                Outcome::Hang => r.stopped_at.as_ref().map_or("?".into(), |p| p.describe()),
                Outcome::Pass => "-".into(),
                _ => r.reason.clone().unwrap_or_default(),
            };
            let at: String = if at.chars().count() > 44 { at.chars().take(43).chain(std::iter::once('…')).collect() } else { at };
            let (live, call) = match (r.outcome, &r.counts_at_stop) {
                (Outcome::Hang, Some(k)) => (k.shown().to_string(), k.calls.clone()),
                (Outcome::Hang, None) => ("?".into(), "?".into()),
                _ => ("-".into(), "-".into()),
            };
            let peak = r.peak_live.map_or("-".into(), |p| p.to_string());
            o.push_str(&format!("{:<w$}  {:<3}  {res:<6}  {call:<cw$}  {at:<44}  {live:<4}  {peak:<4}  {:>6.2}s\n", cr.config.label, r.run, r.elapsed_s));
        }
    }
    o
}

pub(super) fn render_report(out: &SweepOut) -> String {
    let mut o = String::new();
    o.push_str(&format!("hipfft-pool {} sweep report\n", out.version));
    o.push_str(&format!("command:  {}\n", out.command.join(" ")));
    o.push_str(&format!("runtime:  {}\n", out.runtime));
    if let Some(b) = out.sim_block_above_live {
        o.push_str(&format!("sim:      plan creation blocks forever once more than {b} handles would be alive (HIPFFT_POOL_SIM_BLOCK_ABOVE_LIVE)\n"));
    }
    o.push_str(&format!(
        "limits:   a run hangs after {:.1} s without exit or {:.1} s without progress; {} runs per configuration\n",
        out.timeout_s, out.stall_s, out.runs_per_config
    ));
    o.push_str("columns:  in call = the plan calls running when the run stopped (create, destroy, exec);\n");
    o.push_str("          stopped at = the step in progress when the run stopped (cycle, position in the run order, shape);\n");
    o.push_str("          live = handles alive during the hang (the sim's count on the sim, else counted at the runtime boundary);\n");
    o.push_str("          peak = the most handles alive during the run\n\n");
    let mut group = "";
    let mut by_group: Vec<(&str, Vec<ConfigResult>)> = Vec::new();
    for r in &out.configs {
        if r.config.group != group {
            group = &r.config.group;
            by_group.push((group, Vec::new()));
        }
        by_group.last_mut().expect("pushed").1.push(r.clone());
    }
    for (g, rs) in &by_group {
        if by_group.len() > 1 || *g != "sweep" {
            o.push_str(&format!("== {g} ==\n"));
        }
        o.push_str(&table(rs));
        o.push('\n');
    }
    o.push_str("Verdicts:\n");
    for r in &out.configs {
        o.push_str(&format!("  {}\n", r.summary));
    }
    let obs = observations(&out.configs);
    if !obs.is_empty() {
        o.push_str("\nObservations:\n");
        for l in obs {
            o.push_str(&format!("  {l}\n"));
        }
    }
    for n in &out.notes {
        o.push_str(&format!("\nnote: {n}\n"));
    }
    let hung: Vec<(&ConfigResult, &RunResult)> =
        out.configs.iter().flat_map(|c| c.runs.iter().map(move |r| (c, r))).filter(|(_, r)| r.outcome != Outcome::Pass).collect();
    if !hung.is_empty() {
        o.push_str("\nRuns that did not pass, in detail\n");
        o.push_str("==================================\n");
    }
    for (c, r) in hung {
        o.push_str(&format!("\n--- {} run {}: {:?} ---\n", c.config.label, r.run, r.outcome));
        if let Some(why) = &r.reason {
            o.push_str(&format!("why:        {why}\n"));
        }
        if let Some(p) = &r.stopped_at {
            o.push_str(&format!("stopped at: {} (step {} of the run, {} steps done)\n", p.describe(), p.step, r.steps_done));
        }
        if let Some(k) = &r.counts_at_stop {
            o.push_str(&format!(
                "counts:     {} handles alive at the runtime boundary{} (most since the step began {}); the {}'s own count {}, cached {}, in flight {}\n",
                k.rt_live,
                k.sim_live.map_or(String::new(), |s| format!(", {s} by the sim's count")),
                k.step_max,
                match c.config.mode {
                    Mode::Pool => "pool",
                    Mode::Legacy => "legacy cache",
                },
                k.live,
                k.cached,
                k.in_flight
            ));
            o.push_str(&format!("in call:    {}\n", if k.calls == "-" { "no plan call running (stuck elsewhere)".to_string() } else { format!("plan {} running", k.calls) }));
        }
        o.push_str(&format!("time:       {:.2} s, pid {}, exit {}\n", r.elapsed_s, r.pid, r.exit_code.map_or("none (killed)".into(), |c| c.to_string())));
        if let Some(h) = &r.hang_report {
            o.push_str(&h.render());
        }
        if !r.stderr_tail.is_empty() {
            o.push_str("stderr (last lines):\n");
            for l in r.stderr_tail.lines() {
                o.push_str(&format!("  {l}\n"));
            }
        }
    }
    o
}

/// What the configurations say together: hangs that follow a count, not a shape.
pub(super) fn observations(configs: &[ConfigResult]) -> Vec<String> {
    let mut out = Vec::new();
    let hung_at = |c: &ConfigResult| -> Option<Position> {
        (c.verdict == "hung").then(|| c.runs.first().and_then(|r| r.stopped_at.clone())).flatten()
    };
    for (i, a) in configs.iter().enumerate() {
        for b in &configs[i + 1..] {
            let (ca, cb) = (&a.config, &b.config);
            let same = ca.mode == cb.mode && ca.capacity == cb.capacity && ca.ceiling == cb.ceiling && ca.destroy == cb.destroy && ca.auto_alloc == cb.auto_alloc && ca.repeat == cb.repeat && ca.repeat.is_none();
            if !same || ca.order == cb.order || (ca.order != "forward" && cb.order != "forward") {
                continue;
            }
            if let (Some(pa), Some(pb)) = (hung_at(a), hung_at(b)) {
                let follows = if pa.step == pb.step && pa.shape != pb.shape {
                    "same step, different shape: the hang follows the number of plans made, not a shape"
                } else if pa.shape == pb.shape {
                    "same shape: the hang follows the shape"
                } else {
                    "different step and shape"
                };
                out.push(format!(
                    "order {} hangs at step {} (shape #{}), order {} at step {} (shape #{}): {follows}",
                    ca.order, pa.step, pa.shape, cb.order, pb.step, pb.shape
                ));
            }
        }
    }
    // Where the limit lies: the live count of every hang, and the call it hung in.
    let hangs: Vec<&RunResult> = configs.iter().flat_map(|c| c.runs.iter()).filter(|r| r.outcome == Outcome::Hang).collect();
    let live: BTreeSet<usize> = hangs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|k| k.shown())).collect();
    let calls: BTreeSet<&str> = hangs.iter().filter_map(|r| r.counts_at_stop.as_ref().map(|k| k.calls.as_str())).collect();
    if live.len() == 1 && calls.len() == 1 && calls.contains("create") {
        let n = *live.iter().next().expect("one");
        out.push(format!(
            "every hang ({}) was a plan creation with {n} handles alive counting the one being made: the device stops at {} live plans; a pool with --ceiling {} or less stays below it",
            hangs.len(),
            n - 1,
            n - 1
        ));
    } else if !hangs.is_empty() {
        let live = live.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
        out.push(format!("hangs had {live} handles alive, in plan calls: {}", calls.into_iter().collect::<Vec<_>>().join(", ")));
    }
    if calls_any(&hangs, "destroy") {
        out.push("a hang inside a plan destroy: the case the original block was traced to (hipFree inside hipfftDestroy waiting in a device-wide synchronization); see docs/investigation.md".into());
    }
    let passed_controls: Vec<&ConfigResult> = configs.iter().filter(|c| c.config.repeat.is_some() && c.verdict == "passed").collect();
    for c in passed_controls {
        out.push(format!("{}: the single-shape control passed (one plan, reused): repetition alone does not hang", c.config.label));
    }
    out
}

pub(super) fn calls_any(hangs: &[&RunResult], call: &str) -> bool {
    hangs.iter().any(|r| r.counts_at_stop.as_ref().is_some_and(|k| k.calls.contains(call)))
}

pub(super) fn sweep_plot(out: &SweepOut, results: &[ConfigResult]) -> String {
    let mut series = Vec::new();
    let mut notes = Vec::new();
    for cr in results {
        let Some(r) = cr.runs.first() else {
            let why = if cr.rejected.is_some() { "rejected (capacity > ceiling), not run" } else { "not run" };
            notes.push(format!("{}: {why}", cr.config.label));
            continue;
        };
        let points: Vec<(f64, f64)> = r.rows.iter().map(|row| (row.step as f64 + 1.0, row.plotted_live() as f64)).collect();
        series.push(Series { label: cr.config.label.clone(), points, hung: r.outcome == Outcome::Hang, dashed: false });
    }
    let mut hlines = Vec::new();
    let ceilings: BTreeSet<usize> = results.iter().filter(|c| c.rejected.is_none()).filter_map(|c| c.config.ceiling).collect();
    for c in ceilings {
        hlines.push(HLine { label: format!("pool live ceiling {c}"), y: c as f64, color: plot::CEILING_COLOR });
    }
    if let Some(b) = out.sim_block_above_live {
        hlines.push(HLine { label: format!("sim blocks above {b} live"), y: b as f64, color: plot::BLOCK_COLOR });
    }
    plot::svg(
        &format!("hipfft-pool sweep on {}: live handles per configuration (first run)", out.runtime),
        "step (shapes run)",
        "live handles, most during each step",
        &series,
        &hlines,
        &notes,
    )
}

pub(super) fn summarize(plan: &Plan<'_>, results: &[ConfigResult], notes: &[String]) -> SweepOut {
    let a = plan.args;
    let all_runs = || results.iter().flat_map(|c| c.runs.iter());
    let hung = all_runs().any(|r| r.outcome == Outcome::Hang);
    let failed = all_runs().any(|r| r.outcome == Outcome::Fail);
    let errored = all_runs().any(|r| r.outcome == Outcome::Error);
    let code: u8 = if hung || failed {
        1
    } else if errored {
        2
    } else {
        0
    };
    let block = all_runs().find_map(|r| r.block_above);
    let runtime = all_runs().find_map(|r| r.result.as_ref()?.get("runtime")?.as_str().map(str::to_string)).unwrap_or_else(|| a.exp.runtime.clone());
    SweepOut {
        version: env!("CARGO_PKG_VERSION"),
        runtime,
        command: std::env::args().collect(),
        timeout_s: plan.timeout.as_secs_f64(),
        stall_s: plan.stall.as_secs_f64(),
        runs_per_config: a.runs,
        sim_block_above_live: block,
        configs: results.to_vec(),
        hung,
        exit_code: code,
        report: a.report.display().to_string(),
        notes: notes.to_vec(),
    }
}

/// Rewrites the report with what is done so far, so an interrupted sweep leaves one.
pub(super) fn checkpoint(plan: &Plan<'_>, results: &[ConfigResult], notes: &[String]) {
    let text = render_report(&summarize(plan, results, notes));
    let _ = std::fs::write(&plan.args.report, format!("(partial: the sweep was still running; {} configurations done)\n{text}", results.len()));
}

pub(super) fn finish(plan: &Plan<'_>, results: Vec<ConfigResult>, notes: Vec<String>) -> Result<ExitCode> {
    let a = plan.args;
    let out = summarize(plan, &results, &notes);
    let code = out.exit_code;
    let text = render_report(&out);
    std::fs::write(&a.report, &text).map_err(|e| bad("--report", format!("cannot write {}: {e}", a.report.display())))?;
    if let Some(p) = &a.timeline {
        let rows: Vec<TimelineRow> = results.iter().flat_map(|c| c.runs.iter().flat_map(|r| r.rows.iter().cloned())).collect();
        plot::write_csv(p, &rows).map_err(|e| bad("--timeline", format!("cannot write {}: {e}", p.display())))?;
    }
    if let Some(p) = &a.plot {
        std::fs::write(p, sweep_plot(&out, &results)).map_err(|e| bad("--plot", format!("cannot write {}: {e}", p.display())))?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&out).expect("sweep result serializes"));
    } else {
        // The summary part of the report: everything before the details.
        let summary = text.split("\nRuns that did not pass, in detail").next().unwrap_or(&text);
        print!("{summary}");
        println!("\nreport: {}", a.report.display());
    }
    Ok(ExitCode::from(code))
}
