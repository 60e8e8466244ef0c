//! Ticks of a time axis: at a round interval (1, 2 or 5 of a unit, 15 and 30 s and min,
//! 3, 6 and 12 h, days), between four and ten of them, each labelled with its time of
//! day in UTC (to the digits its interval needs).

use time::OffsetDateTime;

/// Round intervals, seconds.
const STEPS: [f64; 42] = [
    1e-6,
    2e-6,
    5e-6,
    1e-5,
    2e-5,
    5e-5,
    1e-4,
    2e-4,
    5e-4,
    1e-3,
    2e-3,
    5e-3,
    1e-2,
    2e-2,
    5e-2,
    0.1,
    0.2,
    0.5,
    1.0,
    2.0,
    5.0,
    10.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    10800.0,
    21600.0,
    43200.0,
    86400.0,
    172_800.0,
    432_000.0,
    864_000.0,
    1_728_000.0,
    4_320_000.0,
    8_640_000.0,
];
/// Ticks at most; the steps grow by 2.5 at most, so there are at least 10 / 2.5 of them.
const MAX_TICKS: f64 = 10.0;

/// The ticks over `t0..t1` (seconds since the epoch): each time and its label.
pub fn ticks(t0: f64, t1: f64) -> Vec<(f64, String)> {
    if !(t0.is_finite() && t1.is_finite()) || t1 <= t0 {
        return Vec::new();
    }
    let span = t1 - t0;
    let step = STEPS
        .iter()
        .copied()
        .find(|step| span / step <= MAX_TICKS)
        .unwrap_or(span / MAX_TICKS);
    let digits = fraction_digits(step);
    let days_differ = day(t0) != day(t1);
    let mut out = Vec::new();
    let mut k = (t0 / step).ceil();
    while k * step <= t1 && out.len() < MAX_TICKS as usize + 1 {
        let t = k * step;
        let with_date = step >= 86400.0 || days_differ;
        out.push((t, label(t, digits, with_date, step >= 60.0)));
        k += 1.0;
    }
    out
}

/// Digits after the second that a step needs.
fn fraction_digits(step: f64) -> usize {
    let mut digits = 0;
    while digits < 6 && (step * 10f64.powi(digits as i32)).fract().abs() > 1e-6 {
        digits += 1;
    }
    digits
}

fn day(t: f64) -> i64 {
    (t / 86400.0).floor() as i64
}

/// `13:54:56`, `13:54:56.25`, `13:55` (a step of minutes), or with the date
/// `11-29 13:54` when days change.
fn label(t: f64, digits: usize, with_date: bool, minutes: bool) -> String {
    let micros = (t * 1e6).round() as i64;
    let (secs, micros) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    let Ok(dt) = OffsetDateTime::from_unix_timestamp(secs) else {
        return format!("{t}");
    };
    let mut out = if with_date {
        format!("{:02}-{:02} ", u8::from(dt.month()), dt.day())
    } else {
        String::new()
    };
    out += &format!("{:02}:{:02}", dt.hour(), dt.minute());
    if !minutes {
        out += &format!(":{:02}", dt.second());
    }
    if digits > 0 {
        let fraction = format!("{micros:06}");
        out.push('.');
        out.push_str(fraction.get(..digits).unwrap_or(&fraction));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-29T12:00:00Z.
    const NOON: f64 = 1_795_953_600.0;

    #[test]
    fn between_four_and_ten_ticks_at_round_times_whatever_the_span() {
        for span in [
            1e-5, 3e-3, 0.1, 0.29, 1.0, 7.5, 83.8, 600.0, 4000.0, 1e5, 3e6,
        ] {
            let ticks = ticks(NOON + 0.123, NOON + 0.123 + span);
            assert!((4..=10).contains(&ticks.len()), "{span}: {ticks:?}");
            // seconds since the epoch in a float: steps exact to a few tenths of a µs
            let step = ticks[1].0 - ticks[0].0;
            assert!(ticks
                .windows(2)
                .all(|w| (w[1].0 - w[0].0 - step).abs() < step * 1e-3 + 3e-7));
        }
    }

    #[test]
    fn labels_are_times_of_day_with_the_digits_the_step_needs() {
        let labels = |t0: f64, t1: f64| -> Vec<String> {
            ticks(t0, t1).into_iter().map(|(_, l)| l).collect()
        };
        assert_eq!(
            labels(NOON + 0.5, NOON + 84.3)[..3],
            ["12:00:10", "12:00:20", "12:00:30"]
        );
        assert_eq!(
            labels(NOON + 0.01, NOON + 0.29)[..2],
            ["12:00:00.05", "12:00:00.10"]
        );
        assert_eq!(
            labels(NOON - 3600.0, NOON + 7200.0)[..2],
            ["11:00", "11:30"]
        );
        assert_eq!(labels(NOON, NOON + 86400.0 * 5.0)[0], "11-29 12:00");
        assert!(ticks(NOON, NOON).is_empty());
        assert!(ticks(f64::NAN, NOON).is_empty());
    }
}
