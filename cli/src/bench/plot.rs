//! The distributions of a MaskBench run as an SVG: the cumulative share of
//! tokens by mask time and of files by time to first mask, per engine, on
//! log-scaled time axes (plotters).

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use super::Outcome;
use super::summary::percentile;

const COLORS: [RGBColor; 4] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
];

/// Writes the two CDFs of `outcomes` for `names` to `path`.
pub(crate) fn svg(outcomes: &[Outcome], names: &[&'static str], path: &Path) -> Result<()> {
    let series = |pick: &dyn Fn(&Outcome) -> Vec<f64>| -> Vec<(&'static str, Vec<f64>)> {
        names
            .iter()
            .map(|&name| {
                let mut values: Vec<f64> = outcomes
                    .iter()
                    .filter(|o| o.engine == name)
                    .flat_map(pick)
                    .filter(|v| *v > 0.0)
                    .collect();
                values.sort_by(f64::total_cmp);
                (name, values)
            })
            .collect()
    };
    let tokens = series(&|o| o.token_us.clone());
    let ttfm = series(&|o| o.compile_us.into_iter().collect());
    let root = SVGBackend::new(path, (1200, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let (left, right) = root.split_horizontally(600);
    cdf(&left, "mask + commit per token", "tokens", &tokens)?;
    cdf(
        &right,
        "time to first mask (compile + first mask)",
        "files",
        &ttfm,
    )?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

/// One CDF chart of `series` (sorted microseconds) on `area`.
fn cdf(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    what: &str,
    series: &[(&'static str, Vec<f64>)],
) -> Result<()> {
    let all = series.iter().flat_map(|(_, v)| v.iter().copied());
    let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if lo <= hi {
        (lo * 0.9, hi * 1.1)
    } else {
        (0.1, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("microseconds (log scale)")
        .y_desc(format!("share of {what}"))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (i, (name, values)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points = (0..=1000u16).filter(|_| !values.is_empty()).map(|step| {
            (
                percentile(values, usize::from(step)),
                f64::from(step) / 1000.0,
            )
        });
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
