//! PNG charts of experiment results (plotters, bitmap backend).
//!
//! Text is drawn with a TrueType font read from the system at run time (DejaVu Sans or
//! Liberation Sans, as Debian's `fonts-dejavu-core` installs it; `PERMAFROST_PLOT_FONT`
//! names another file), so the binary carries no font and needs no fontconfig.

use std::path::Path;
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::BenchError;

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
];

const FONT: &str = "permafrost-sans";

/// Registers the font once; an error says how to get one.
fn font() -> Result<(), BenchError> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let candidates: Vec<String> = std::env::var("PERMAFROST_PLOT_FONT")
                .into_iter()
                .chain(FONT_PATHS.iter().map(|s| s.to_string()))
                .collect();
            for path in &candidates {
                if let Ok(bytes) = std::fs::read(path) {
                    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                    if plotters::style::register_font(FONT, FontStyle::Normal, bytes).is_ok() {
                        return Ok(());
                    }
                }
            }
            Err("no TrueType font for chart labels: install fonts-dejavu-core or set PERMAFROST_PLOT_FONT to a .ttf file"
                .to_string())
        })
        .clone()
        .map_err(BenchError::Options)
}

fn plot_err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Client(format!("drawing the chart: {e}"))
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// One line of a line chart: a label and its (x, y) points in x order.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart with one line per series. The distinct x values are placed at equal
/// distances (as categories, labelled by `x_fmt`); when the values span more than two
/// decades the y axis is logarithmic, so that slow and fast configurations both show.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_fmt: &dyn Fn(f64) -> String,
) -> Result<(), BenchError> {
    font()?;
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    draw_lines(&root, title, x_label, y_label, series, x_fmt, 22)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// One chart of a grid: its title and lines.
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

/// Line charts in a grid of `cols` columns under one title, each drawn as [`line_chart`]
/// draws one (panels without points are left blank).
pub fn grid_chart(
    path: &Path,
    title: &str,
    cols: usize,
    panels: &[Panel],
    x_label: &str,
    y_label: &str,
    x_fmt: &dyn Fn(f64) -> String,
) -> Result<(), BenchError> {
    font()?;
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols).max(1);
    let root = BitMapBackend::new(path, (520 * cols as u32, 380 * rows as u32 + 50)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = root.titled(title, (FONT, 26)).map_err(plot_err)?;
    for (area, panel) in body.split_evenly((rows, cols)).iter().zip(panels) {
        if panel.series.iter().any(|s| s.points.iter().any(|p| p.1 > 0.0)) {
            draw_lines(area, &panel.title, x_label, y_label, &panel.series, x_fmt, 18)?;
        }
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Draws the lines of `series` on `area` (see [`line_chart`]).
fn draw_lines(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    x_fmt: &dyn Fn(f64) -> String,
    title_size: u32,
) -> Result<(), BenchError> {
    let mut xs: Vec<f64> = series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|y| *y > 0.0)
        .collect();
    if xs.is_empty() || ys.is_empty() {
        return Err(BenchError::Options("nothing to plot".into()));
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let pos = |x: f64| xs.iter().position(|v| *v == x).unwrap_or(0) as f64;
    let n = xs.len() as f64;
    let (lo, hi) = ys.iter().fold((f64::MAX, 0.0f64), |(a, b), &y| (a.min(y), b.max(y)));
    let labels = xs.clone();
    let x_formatter = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
            x_fmt(labels[i as usize])
        } else {
            String::new()
        }
    };
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, (FONT, title_size))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80);
    let x_range = -0.4..(n - 0.6);
    // Draws everything onto a chart whatever its y coordinate type.
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .x_labels(xs.len() * 4 + 1)
                .x_label_formatter(&x_formatter)
                .y_label_formatter(&|y| format_count(*y))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 16))
                .light_line_style(WHITE.mix(0.0))
                .draw()
                .map_err(plot_err)?;
            for (i, s) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .filter(|p| p.1 > 0.0)
                    .map(|&(x, y)| (pos(x), y))
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(plot_err)?
                    .label(s.label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 4, color.filled())))
                    .map_err(plot_err)?;
            }
            chart
                .configure_series_labels()
                .label_font((FONT, 14))
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(plot_err)?;
        }};
    }
    if hi / lo > 100.0 {
        let chart = builder
            .build_cartesian_2d(x_range, ((lo / 2.0)..(hi * 3.0)).log_scale())
            .map_err(plot_err)?;
        draw!(chart);
    } else {
        // Headroom for the legend in the upper left, a line per series, so that no point
        // hides behind it.
        let top = hi * (1.15 + 0.12 * series.len() as f64);
        let chart = builder.build_cartesian_2d(x_range, 0.0..top).map_err(plot_err)?;
        draw!(chart);
    }
    Ok(())
}

/// A bar chart: one bar per (label, value), values written above the bars.
pub fn bar_chart(path: &Path, title: &str, y_label: &str, bars: &[(String, f64)]) -> Result<(), BenchError> {
    font()?;
    if bars.is_empty() {
        return Err(BenchError::Options("nothing to plot".into()));
    }
    let y1 = bars.iter().map(|b| b.1).fold(0.0, f64::max) * 1.15 + 1.0;
    let n = bars.len();
    let root = BitMapBackend::new(path, (230 * n as u32 + 200, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FONT, 22))
        .margin(16)
        .x_label_area_size(70)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..n as f64, 0.0..y1)
        .map_err(plot_err)?;
    let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = (x - 0.5).round();
            if (x - 0.5 - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        })
        .y_desc(y_label)
        .y_label_formatter(&|y| format_count(*y))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 16))
        .draw()
        .map_err(plot_err)?;
    for (i, (_, v)) in bars.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let x = i as f64;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x + 0.15, 0.0), (x + 0.85, *v)],
                color.filled(),
            )))
            .map_err(plot_err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format_count(*v),
                (x + 0.3, *v + y1 * 0.02),
                (FONT, 14).into_font(),
            )))
            .map_err(plot_err)?;
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// 1234567 -> "1.23M", 45600 -> "45.6K".
pub fn format_count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.1}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_short() {
        assert_eq!(format_count(1_234_567.0), "1.23M");
        assert_eq!(format_count(45_600.0), "45.6K");
        assert_eq!(format_count(12.0), "12");
    }

    #[test]
    fn draws_pngs() {
        if font().is_err() {
            // The error names the missing package; CI installs it (.ci/run).
            panic!("{}", font().unwrap_err());
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l.png");
        let series = vec![
            Series {
                label: "a".into(),
                points: vec![(4096.0, 10.0), (65536.0, 30.0)],
            },
            Series {
                label: "b".into(),
                points: vec![(4096.0, 20.0), (65536.0, 5.0)],
            },
        ];
        line_chart(&p, "t", "x", "y", &series, &|x| format!("{x}")).unwrap();
        let wide = vec![Series {
            label: "a".into(),
            points: vec![(1.0, 10.0), (2.0, 100_000.0)],
        }];
        line_chart(&p, "t", "x", "y", &wide, &|x| format!("{x}")).unwrap();
        let panels = vec![
            Panel {
                title: "one".into(),
                series,
            },
            Panel {
                title: "empty".into(),
                series: Vec::new(),
            },
            Panel {
                title: "wide".into(),
                series: wide,
            },
        ];
        let g = dir.path().join("g.png");
        grid_chart(&g, "t", 2, &panels, "x", "y", &|x| format!("{x}")).unwrap();
        assert_eq!(&std::fs::read(&g).unwrap()[1..4], b"PNG");
        let png = std::fs::read(&p).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let p = dir.path().join("b.png");
        bar_chart(&p, "t", "y", &[("one".into(), 3.0), ("two".into(), 5.0)]).unwrap();
        assert_eq!(&std::fs::read(&p).unwrap()[1..4], b"PNG");
        assert!(line_chart(&p, "t", "x", "y", &[], &|x| format!("{x}")).is_err());
    }
}
