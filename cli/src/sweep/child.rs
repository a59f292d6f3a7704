//! The child process of one sweep run: its command line, its progress lines, its output
//! tails, and the kill of a run that hung (after its backtraces were taken).

use super::*;

pub(super) enum Msg {
    Line(String),
    Eof,
}

/// `word k=v k=v` -> the value of `key`.
pub(super) fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().skip(1).find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

pub(super) fn num(line: &str, key: &str) -> Option<usize> {
    field(line, key)?.parse().ok()
}

pub(super) fn counts_of(line: &str) -> Counts {
    Counts {
        live: num(line, "live").unwrap_or(0),
        cached: num(line, "cached").unwrap_or(0),
        in_flight: num(line, "inflight").unwrap_or(0),
        rt_live: num(line, "rt_live").unwrap_or(0),
        step_max: num(line, "max").unwrap_or(0),
        calls: field(line, "calls").unwrap_or("-").to_string(),
        sim_live: num(line, "sim_live"),
    }
}

pub(super) fn t_of(line: &str) -> f64 {
    field(line, "t").and_then(|t| t.parse().ok()).unwrap_or(0.0)
}

pub(super) fn shape_name(shapes: &[ProbeShape], i: usize) -> String {
    shapes.get(i).map_or_else(|| "?".into(), |s| format!("{} {} n={} batch={}", s.name, s.kind, s.n, s.batch))
}

pub(super) fn child_command(plan: &Plan<'_>, c: &Config, run: usize) -> std::io::Result<Command> {
    let e = &plan.args.exp;
    let mut cmd = Command::new(&plan.exe);
    cmd.arg("probe")
        .args(["--runtime", &e.runtime, "--mode", c.mode.name(), "--capacity", &c.capacity.to_string()])
        .args(["--cycles", &e.cycles.to_string(), "--order", &c.order, "--destroy", c.destroy.name()])
        .args(["--device", &e.device.to_string(), "--label", &c.label, "--progress-protocol", "--parent-watch"]);
    if let Some(ceil) = c.ceiling {
        cmd.args(["--ceiling", &ceil.to_string()]);
    }
    if c.auto_alloc {
        cmd.arg("--auto-alloc");
    }
    if let Some([i, n]) = c.repeat {
        cmd.args(["--repeat-shape", &i.to_string(), "--repeat", &n.to_string()]);
    }
    if let Some(s) = &e.shapes {
        cmd.arg("--shapes").arg(s);
    }
    let log_dir = e.rocfft_log.as_ref().map(|d| d.join(slug(&c.label)).join(format!("run{run}")));
    for (k, v) in rocfft_env(e, log_dir.as_deref())? {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    Ok(cmd)
}

pub(super) fn slug(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '=' { c } else { '_' }).collect()
}

/// Keeps the last `cap` bytes of a stream.
pub(super) fn tail_reader(mut r: impl Read + Send + 'static, cap: usize) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let b = buf.clone();
    std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let mut g = b.lock().unwrap_or_else(|p| p.into_inner());
            g.extend_from_slice(&chunk[..n]);
            if g.len() > cap {
                let cut = g.len() - cap;
                g.drain(..cut);
            }
        }
    });
    buf
}

pub(super) fn last_lines(bytes: &[u8], n: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

pub(super) fn run_child(plan: &Plan<'_>, c: &Config, run: usize) -> RunResult {
    let started = Instant::now();
    let mut r = RunResult {
        run,
        outcome: Outcome::Error,
        reason: None,
        elapsed_s: 0.0,
        pid: 0,
        exit_code: None,
        steps_done: 0,
        stopped_at: None,
        counts_at_stop: None,
        peak_live: None,
        result: None,
        hang_report: None,
        stderr_tail: String::new(),
        rows: Vec::new(),
        block_above: None,
    };
    let spawned = child_command(plan, c, run).and_then(|mut cmd| cmd.spawn());
    let mut child: Child = match spawned {
        Ok(ch) => ch,
        Err(e) => {
            r.reason = Some(format!("cannot start {}: {e}", plan.exe.display()));
            return r;
        }
    };
    r.pid = child.id();
    // Held open for the child's life: it kills itself when this end closes.
    let stdin = child.stdin.take();
    let stdout = child.stdout.take().expect("piped");
    let stderr = tail_reader(child.stderr.take().expect("piped"), 256 * 1024);
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            match l {
                Ok(l) => {
                    if tx.send(Msg::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Msg::Eof);
    });
    let mut last_progress = started;
    let mut eof = false;
    let mut position = Position { phase: "start".into(), ..Default::default() };
    let mut heartbeat: Option<Counts> = None;
    let mut peak = 0usize;
    let mut base_steps = plan.bar.position();
    let handle = |line: &str, r: &mut RunResult, last_progress: &mut Instant, position: &mut Position, heartbeat: &mut Option<Counts>, peak: &mut usize| {
        let word = line.split_whitespace().next().unwrap_or("");
        match word {
            "start" => {
                r.block_above = num(line, "sim_block_above_live");
                *last_progress = Instant::now();
            }
            "progress" => {
                *last_progress = Instant::now();
                let shape = num(line, "shape").unwrap_or(0);
                *position = Position {
                    phase: "shapes".into(),
                    step: num(line, "step").unwrap_or(0),
                    cycle: num(line, "cycle").unwrap_or(0),
                    pos: num(line, "pos").unwrap_or(0),
                    shape,
                    shape_name: shape_name(plan.shapes, shape),
                };
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                *heartbeat = Some(k);
            }
            "sample" => {
                *last_progress = Instant::now();
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                let step = num(line, "step").unwrap_or(0);
                r.steps_done = step + 1;
                plan.bar.set_position(base_steps + r.steps_done as u64);
                r.rows.push(TimelineRow {
                    config: c.label.clone(),
                    run,
                    event: "step",
                    step,
                    cycle: num(line, "cycle").unwrap_or(0),
                    pos: num(line, "pos").unwrap_or(0),
                    shape: num(line, "shape").unwrap_or(0),
                    live: k.live,
                    cached: k.cached,
                    in_flight: k.in_flight,
                    rt_live: k.rt_live,
                    step_max: k.step_max,
                    sim_live: k.sim_live,
                    t_s: t_of(line),
                });
            }
            "heartbeat" => {
                let k = counts_of(line);
                *peak = (*peak).max(k.most());
                *heartbeat = Some(k);
            }
            "phase" => {
                *last_progress = Instant::now();
                if field(line, "name") == Some("shutdown") {
                    position.phase = "shutdown".into();
                }
            }
            "result" => {
                *last_progress = Instant::now();
                r.result = serde_json::from_str(line["result".len()..].trim()).ok();
            }
            _ => {}
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(e) => {
                r.reason = Some(format!("cannot wait for the child: {e}"));
                break None;
            }
        }
        let now = Instant::now();
        let hung = if now >= started + plan.timeout {
            Some(format!("no exit after {:.1} s (--timeout)", plan.timeout.as_secs_f64()))
        } else if now >= last_progress + plan.stall {
            Some(format!("no progress for {:.1} s (--stall)", plan.stall.as_secs_f64()))
        } else {
            None
        };
        if let Some(why) = hung {
            // Drain what the child said before it stopped, then look at it, then kill it.
            while let Ok(Msg::Line(l)) = rx.try_recv() {
                handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak);
            }
            r.outcome = Outcome::Hang;
            r.reason = Some(why);
            r.stopped_at = Some(position.clone());
            r.counts_at_stop = heartbeat.clone();
            plan.bar.set_message(format!("{} run {run}: hung, recording backtraces", c.label));
            let report = hang::collect(r.pid, plan.backtrace);
            let mut pids: Vec<u32> = hang::descendants(r.pid);
            pids.push(r.pid);
            hang::kill_all(&pids);
            let _ = child.kill();
            let _ = child.wait();
            r.hang_report = Some(report);
            break None;
        }
        let wait = Duration::from_millis(50);
        if eof {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        match rx.recv_timeout(wait) {
            Ok(Msg::Line(l)) => handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak),
            Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
            Err(RecvTimeoutError::Timeout) => {}
        }
    };
    drop(stdin);
    if let Some(st) = status {
        // Exited: read what is left of its output (its stdout closes with it).
        let until = Instant::now() + Duration::from_secs(2);
        while !eof && Instant::now() < until {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Msg::Line(l)) => handle(&l, &mut r, &mut last_progress, &mut position, &mut heartbeat, &mut peak),
                Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => eof = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
        r.exit_code = st.code();
        let passed = r.result.as_ref().and_then(|v| v.get("passed")).and_then(|v| v.as_bool()).unwrap_or(false);
        r.stopped_at = Some(position.clone());
        r.counts_at_stop = heartbeat.clone();
        (r.outcome, r.reason) = match (st.code(), passed) {
            (Some(0), true) => (Outcome::Pass, None),
            (Some(2), _) => (Outcome::Error, Some(first_error(&stderr, st))),
            _ => {
                let why = r
                    .result
                    .as_ref()
                    .and_then(|v| v.get("failure"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| first_error(&stderr, st));
                (Outcome::Fail, Some(why))
            }
        };
    }
    if let Some(res) = &r.result {
        for key in ["sim_peak_live", "rt_peak_live"] {
            peak = peak.max(res.get(key).and_then(|v| v.as_u64()).unwrap_or(0) as usize);
        }
    }
    r.peak_live = (peak > 0 || r.result.is_some()).then_some(peak);
    if let (Outcome::Hang, Some(p), Some(k)) = (r.outcome, r.stopped_at.clone(), r.counts_at_stop.clone()) {
        r.rows.push(TimelineRow {
            config: c.label.clone(),
            run,
            event: "hang",
            step: p.step,
            cycle: p.cycle,
            pos: p.pos,
            shape: p.shape,
            live: k.live,
            cached: k.cached,
            in_flight: k.in_flight,
            rt_live: k.rt_live,
            step_max: k.most(),
            sim_live: k.sim_live,
            t_s: started.elapsed().as_secs_f64(),
        });
    }
    r.elapsed_s = started.elapsed().as_secs_f64();
    r.stderr_tail = last_lines(&stderr.lock().unwrap_or_else(|p| p.into_inner()), 40);
    // Keep the bar's count whole for runs that stopped early.
    base_steps += steps_per_run(plan) as u64;
    plan.bar.set_position(base_steps);
    r
}

pub(super) fn first_error(stderr: &Arc<Mutex<Vec<u8>>>, st: std::process::ExitStatus) -> String {
    let g = stderr.lock().unwrap_or_else(|p| p.into_inner());
    let s = String::from_utf8_lossy(&g);
    s.lines()
        .rev()
        .find(|l| l.starts_with("hipfft-pool:") || l.contains("panicked"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| format!("exited with {st}"))
}
