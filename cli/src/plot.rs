//! Timelines of live handles: the CSV both `probe` and `sweep` write, and a hand-written
//! SVG chart of them (no plotting dependency: the chart is a few lines, polylines and text).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// One sample of a run: taken after every step (`event` = `step`), plus, for a run that
/// stopped progressing, the counts the child's heartbeat reported during the hang
/// (`event` = `hang`).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TimelineRow {
    pub config: String,
    pub run: usize,
    pub event: &'static str,
    pub step: usize,
    pub cycle: usize,
    pub pos: usize,
    pub shape: usize,
    /// The plan source's own count of live handles (the pool's metrics, or the legacy
    /// cache's count of handles created and not yet destroyed).
    pub live: usize,
    pub cached: usize,
    pub in_flight: usize,
    /// Handles alive at the runtime boundary after the step (see `cli/counting.rs`).
    pub rt_live: usize,
    /// The most handles alive at the runtime boundary during the step (for a `hang` row:
    /// since the step began, up to the hang).
    pub step_max: usize,
    /// The simulated runtime's ground truth, where the runtime is the sim.
    pub sim_live: Option<usize>,
    pub t_s: f64,
}

impl TimelineRow {
    /// The count to plot: the most handles alive during the step.
    pub fn plotted_live(&self) -> usize {
        self.step_max
    }
}

pub const CSV_HEADER: &str = "config,run,event,step,cycle,pos,shape,live,cached,in_flight,rt_live,step_max,sim_live,t_s";

pub fn write_csv(path: &Path, rows: &[TimelineRow]) -> std::io::Result<()> {
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(CSV_HEADER);
    out.push('\n');
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6}",
            csv_field(&r.config),
            r.run,
            r.event,
            r.step,
            r.cycle,
            r.pos,
            r.shape,
            r.live,
            r.cached,
            r.in_flight,
            r.rt_live,
            r.step_max,
            r.sim_live.map_or(String::new(), |v| v.to_string()),
            r.t_s
        );
    }
    let mut f = std::fs::File::create(path)?;
    f.write_all(out.as_bytes())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

/// One line of the chart.
pub struct Series {
    pub label: String,
    /// (step, handles), in step order.
    pub points: Vec<(f64, f64)>,
    /// Marks the last point as where the run hung.
    pub hung: bool,
    pub dashed: bool,
}

/// A horizontal reference line (the live ceiling, the sim's block threshold).
pub struct HLine {
    pub label: String,
    pub y: f64,
    pub color: &'static str,
}

/// Colours that stay apart: Tableau 10, then ten darker ones; past twenty, lines are dashed.
const PALETTE: [&str; 20] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#08306b", "#7f2704", "#00441b", "#67000d", "#3f007d", "#000000", "#ae017e", "#6b6b00", "#005f73", "#525252",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A step (1, 2, 5 x 10^k) giving about `target` ticks over `span`.
fn nice_step(span: f64, target: f64) -> f64 {
    let raw = (span / target).max(1e-9);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 { 1.0 } else if f <= 2.0 { 2.0 } else if f <= 5.0 { 5.0 } else { 10.0 };
    (nice * mag).max(1.0)
}

/// The chart: one `<polyline>` per series (and no other polylines), one dashed `<line>` per
/// reference line, a legend on the right. A hung series ends in a red cross.
pub fn svg(title: &str, x_label: &str, y_label: &str, series: &[Series], hlines: &[HLine], notes: &[String]) -> String {
    // The legend's width follows its longest label (about 7 px a character at 12 px).
    let longest = series.iter().map(|s| s.label.chars().count() + if s.hung { 7 } else { 0 }).chain(hlines.iter().map(|l| l.label.chars().count())).max().unwrap_or(10);
    let right = (70.0 + 7.2 * longest as f64).max(290.0);
    let h = 560.0f64;
    let (left, top, bottom) = (70.0, 50.0, 60.0);
    let w = left + 640.0 + right;
    let (pw, ph) = (w - left - right, h - top - bottom);
    let x_max = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).fold(1.0f64, f64::max);
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(hlines.iter().map(|l| l.y))
        .fold(1.0f64, f64::max)
        * 1.1;
    let xs = |x: f64| left + x / x_max * pw;
    let ys = |y: f64| top + ph - y / y_max * ph;
    let mut o = String::new();
    let _ = writeln!(o, r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#);
    let _ = writeln!(o, r#"<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(o, r#"<text x="{}" y="28" font-size="16" font-weight="bold">{}</text>"#, left, esc(title));
    // Grid and ticks.
    let ystep = nice_step(y_max, 8.0);
    let mut y = 0.0;
    while y <= y_max + 1e-9 {
        let py = ys(y);
        let _ = writeln!(o, r##"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e6e6e6"/>"##, left + pw);
        let _ = writeln!(o, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#, left - 6.0, py + 4.0, y);
        y += ystep;
    }
    let xstep = nice_step(x_max, 10.0);
    let mut x = 0.0;
    while x <= x_max + 1e-9 {
        let px = xs(x);
        let _ = writeln!(o, r##"<line x1="{px:.1}" y1="{top}" x2="{px:.1}" y2="{:.1}" stroke="#f0f0f0"/>"##, top + ph);
        let _ = writeln!(o, r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, top + ph + 16.0, x);
        x += xstep;
    }
    let _ = writeln!(o, r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##);
    let _ = writeln!(o, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#, left + pw / 2.0, h - 18.0, esc(x_label));
    let _ = writeln!(
        o,
        r#"<text x="18" y="{:.1}" text-anchor="middle" transform="rotate(-90 18 {:.1})">{}</text>"#,
        top + ph / 2.0,
        top + ph / 2.0,
        esc(y_label)
    );
    for (i, l) in hlines.iter().enumerate() {
        let py = ys(l.y);
        let _ = writeln!(
            o,
            r#"<line x1="{left}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="{}" stroke-width="1.2" stroke-dasharray="3 5"/>"#,
            left + pw,
            l.color
        );
        // Alternate the label's end, so lines at one height keep readable labels.
        let (tx, anchor) = if i % 2 == 0 { (left + pw - 4.0, "end") } else { (left + 4.0, "start") };
        let _ = writeln!(o, r#"<text x="{tx:.1}" y="{:.1}" fill="{}" text-anchor="{anchor}">{}</text>"#, py - 4.0, l.color, esc(&l.label));
    }
    // Lines: later series drawn thinner on top, so runs that overlap stay visible as a
    // thin line inside a thicker one.
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let pts: Vec<String> = s.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", xs(x), ys(y))).collect();
        let width = if series.len() > 1 { 5.5 - 3.7 * i as f64 / (series.len() - 1) as f64 } else { 2.0 };
        let dash = if s.dashed || i >= PALETTE.len() { r#" stroke-dasharray="5 3""# } else { "" };
        let _ = writeln!(
            o,
            r#"<polyline fill="none" stroke="{color}" stroke-width="{width:.2}" stroke-linejoin="round"{dash} points="{}"><title>{}</title></polyline>"#,
            pts.join(" "),
            esc(&s.label)
        );
        if let (false, Some(&(x, y))) = (s.hung, s.points.last()) {
            let _ = writeln!(o, r#"<circle cx="{:.1}" cy="{:.1}" r="{:.1}" fill="{color}"/>"#, xs(x), ys(y), width.max(2.5) + 1.0);
        }
        if let (true, Some(&(x, y))) = (s.hung, s.points.last()) {
            let (px, py) = (xs(x), ys(y));
            let _ = writeln!(
                o,
                r##"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="#d00" stroke-width="2.5"/>"##,
                px - 6.0,
                py - 6.0,
                px + 6.0,
                py + 6.0,
                px - 6.0,
                py + 6.0,
                px + 6.0,
                py - 6.0
            );
        }
    }
    // Legend.
    let lx = left + pw + 20.0;
    let mut ly = top + 8.0;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let dash = if s.dashed || i >= PALETTE.len() { r#" stroke-dasharray="5 3""# } else { "" };
        let _ = writeln!(o, r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/>"#, lx + 22.0);
        let tag = if s.hung { " (hung)" } else { "" };
        let _ = writeln!(o, r#"<text x="{:.1}" y="{:.1}">{}{}</text>"#, lx + 28.0, ly + 4.0, esc(&s.label), tag);
        ly += 18.0;
    }
    for l in hlines {
        let _ = writeln!(o, r#"<line x1="{lx}" y1="{ly}" x2="{:.1}" y2="{ly}" stroke="{}" stroke-width="1.5" stroke-dasharray="6 4"/>"#, lx + 22.0, l.color);
        let _ = writeln!(o, r#"<text x="{:.1}" y="{:.1}">{}</text>"#, lx + 28.0, ly + 4.0, esc(&l.label));
        ly += 18.0;
    }
    if series.iter().any(|s| s.hung) {
        let _ = writeln!(o, r##"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="#d00" stroke-width="2.5"/>"##, lx + 5.0, ly - 6.0, lx + 17.0, ly + 6.0, lx + 5.0, ly + 6.0, lx + 17.0, ly - 6.0);
        let _ = writeln!(o, r#"<text x="{:.1}" y="{:.1}">hang (live count during it)</text>"#, lx + 28.0, ly + 4.0);
        ly += 18.0;
    }
    ly += 8.0;
    for n in notes {
        for part in wrap(n, 40) {
            let _ = writeln!(o, r##"<text x="{lx}" y="{ly:.1}" fill="#555">{}</text>"##, esc(&part));
            ly += 15.0;
        }
        ly += 3.0;
    }
    o.push_str("</svg>\n");
    o
}

/// Splits `s` at spaces into lines of at most `width` characters (longer words stay whole).
fn wrap(s: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in s.split_whitespace() {
        match out.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => out.push(word.to_string()),
        }
    }
    out
}

/// Colours of the reference lines: the pool's live ceiling, the sim's block threshold.
pub const CEILING_COLOR: &str = "#2a7";
pub const BLOCK_COLOR: &str = "#d00";
