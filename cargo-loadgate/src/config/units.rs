//! Units at the edges: durations written `"30s"`, sizes written `"512MiB"`, rates and percentages.

use std::time::Duration;

/// Parses a duration such as `250ms`, `30s`, `2m`, `1h`, `1.5s` or `500us`.
///
/// A bare number is refused: the unit must be written, so `hold = 5` cannot mean five of anything.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{s}` has no unit; write e.g. \"{s}s\" or \"{s}ms\""))?;
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration; write e.g. \"30s\", \"250ms\" or \"2m\""))?;
    let seconds_per_unit = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "unknown duration unit `{other}` in `{s}`; use ns, us, ms, s, m or h"
            ));
        }
    };
    let secs = value * seconds_per_unit;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("duration `{s}` is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a size such as `512MiB`, `1GiB`, `64KiB`, `100MB` or `1024B` into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{s}` has no unit; write e.g. \"{s}MiB\""))?;
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a size; write e.g. \"512MiB\""))?;
    let multiplier: f64 = match unit.trim() {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{s}`; use B, KiB, MiB, GiB, KB, MB or GB"
            ));
        }
    };
    let bytes = value * multiplier;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(format!("size `{s}` is out of range"));
    }
    Ok(bytes.round() as u64)
}

/// Parses a percentage such as `60%` into a fraction (0.6).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let number = s
        .trim()
        .strip_suffix('%')
        .ok_or_else(|| format!("`{s}` is not a percentage; write e.g. \"60%\""))?;
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage; write e.g. \"60%\""))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("percentage `{s}` must be zero or more"));
    }
    Ok(value / 100.0)
}

/// Parses a factor such as `1.5x` (also `1.5×`) or `150%` into a number (1.5): how
/// `slo.headroom` is written. It must be greater than zero; a bare number is refused, so that
/// `1.5` cannot be read as 1.5% or as 150%.
pub fn parse_factor(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let hint = "write e.g. \"1.5x\" or \"150%\"";
    let value = if let Some(number) = t.strip_suffix('x').or_else(|| t.strip_suffix('×')) {
        number
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`{s}` is not a factor; {hint}"))?
    } else if let Some(number) = t.strip_suffix('%') {
        number
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("`{s}` is not a factor; {hint}"))?
            / 100.0
    } else if t.parse::<f64>().is_ok() {
        return Err(format!("`{s}` has no unit; {hint}"));
    } else {
        return Err(format!("`{s}` is not a factor; {hint}"));
    };
    if !value.is_finite() {
        return Err(format!("`{s}` is not a factor; {hint}"));
    }
    if value <= 0.0 {
        return Err(format!("factor `{s}` must be greater than zero; {hint}"));
    }
    Ok(value)
}

/// Formats a factor the way the config writes it, e.g. 1.5 as `1.5x`.
pub fn format_factor(value: f64) -> String {
    format!("{}x", format_number(value))
}

/// Formats a duration the way the config writes it, choosing the largest exact unit.
pub fn format_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    for (unit, size) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if nanos.is_multiple_of(size) {
            return format!("{}{unit}", nanos / size);
        }
    }
    format!("{nanos}ns")
}

/// A duration in milliseconds with two decimals and no unit (`12.35`), for table columns whose
/// heading names the unit (`p99 ms`, `lag p99 ms`): the one millisecond formatter of the tables.
pub fn format_millis(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// Parses a growth rate such as `2MiB/min`, `512KiB/s` or `1GiB/h` into bytes per second.
pub fn parse_size_rate(s: &str) -> Result<f64, String> {
    let (size, per) = s
        .trim()
        .split_once('/')
        .ok_or_else(|| format!("`{s}` is not a rate; write e.g. \"2MiB/min\""))?;
    let bytes = parse_size(size)?;
    let per = per.trim();
    // `2MiB/min` names a unit without a number; `2MiB/10s` names a whole duration.
    let window = if per.starts_with(|c: char| c.is_ascii_digit()) {
        parse_duration(per)?
    } else {
        parse_duration(&format!("1{per}"))?
    };
    if window.is_zero() {
        return Err(format!("rate `{s}` divides by a zero duration"));
    }
    Ok(bytes as f64 / window.as_secs_f64())
}

/// Formats a size in bytes the way the config writes it, choosing the largest exact binary unit.
pub fn format_size(bytes: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

/// Formats a growth rate in bytes per second as the largest readable size per minute, e.g. `2MiB/min`.
pub fn format_size_rate(bytes_per_sec: f64) -> String {
    let per_min = bytes_per_sec * 60.0;
    for (unit, size) in [
        ("GiB", 1_073_741_824.0),
        ("MiB", 1_048_576.0),
        ("KiB", 1024.0),
    ] {
        if per_min >= size {
            return format!("{}{unit}/min", format_number(per_min / size));
        }
    }
    format!("{}B/min", format_number(per_min))
}

/// Formats a fraction as a percentage, e.g. 0.005 as `0.5%`.
pub fn format_percent(fraction: f64) -> String {
    format!("{}%", format_number(fraction * 100.0))
}

/// Formats a number with at most six decimals and no trailing zeros, so `0.07 * 100` prints `7`.
pub fn format_number(value: f64) -> String {
    let rounded = format!("{value:.6}");
    let trimmed = rounded.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    #[test_case("30s", Duration::from_secs(30))]
    #[test_case("250ms", Duration::from_millis(250))]
    #[test_case("2m", Duration::from_secs(120))]
    #[test_case("1.5s", Duration::from_millis(1500))]
    #[test_case("500us", Duration::from_micros(500))]
    #[test_case("1h", Duration::from_secs(3600))]
    fn durations_parse(s: &str, expected: Duration) {
        assert_eq!(parse_duration(s).unwrap(), expected);
    }

    #[test_case("30"; "no unit")]
    #[test_case("30 parsecs"; "unknown unit")]
    #[test_case("s"; "no number")]
    #[test_case("1e300h"; "out of range")]
    fn bad_durations_are_refused(s: &str) {
        assert!(parse_duration(s).is_err(), "{s} parsed");
    }

    #[test_case("512MiB", 512 * 1024 * 1024)]
    #[test_case("1GiB", 1024 * 1024 * 1024)]
    #[test_case("100MB", 100_000_000)]
    #[test_case("64B", 64)]
    fn sizes_parse(s: &str, expected: u64) {
        assert_eq!(parse_size(s).unwrap(), expected);
    }

    #[test]
    fn percent_parses_to_a_fraction() {
        assert_eq!(parse_percent("60%").unwrap(), 0.6);
        assert!(parse_percent("60").is_err());
        assert!(parse_percent("-5%").is_err());
    }

    #[test_case("1.5x", 1.5; "a factor")]
    #[test_case("1.5×", 1.5; "the multiplication sign")]
    #[test_case(" 2 x ", 2.0; "spaces")]
    #[test_case("150%", 1.5; "a percentage")]
    #[test_case("0.5x", 0.5; "below one")]
    fn factors_parse(s: &str, expected: f64) {
        assert_eq!(parse_factor(s), Ok(expected), "{s}");
    }

    #[test_case("0x", "factor `0x` must be greater than zero; write e.g. \"1.5x\" or \"150%\""; "zero")]
    #[test_case("0%", "factor `0%` must be greater than zero; write e.g. \"1.5x\" or \"150%\""; "zero percent")]
    #[test_case("-1.5x", "factor `-1.5x` must be greater than zero; write e.g. \"1.5x\" or \"150%\""; "negative")]
    #[test_case("-150%", "factor `-150%` must be greater than zero; write e.g. \"1.5x\" or \"150%\""; "negative percent")]
    #[test_case("1.5", "`1.5` has no unit; write e.g. \"1.5x\" or \"150%\""; "bare number")]
    #[test_case("lots", "`lots` is not a factor; write e.g. \"1.5x\" or \"150%\""; "garbage")]
    #[test_case("x", "`x` is not a factor; write e.g. \"1.5x\" or \"150%\""; "no number")]
    #[test_case("2X", "`2X` is not a factor; write e.g. \"1.5x\" or \"150%\""; "upper case")]
    #[test_case("infx", "`infx` is not a factor; write e.g. \"1.5x\" or \"150%\""; "infinite")]
    fn bad_factors_are_refused(s: &str, message: &str) {
        assert_eq!(parse_factor(s).unwrap_err(), message);
    }

    #[test]
    fn factors_format_as_written() {
        assert_eq!(format_factor(1.5), "1.5x");
        assert_eq!(format_factor(2.0), "2x");
        assert_eq!(parse_factor(&format_factor(1.25)).unwrap(), 1.25);
    }

    #[test]
    fn formatting_round_trips() {
        for s in ["30s", "250ms", "2m", "1h", "500us", "1500ms"] {
            assert_eq!(format_duration(parse_duration(s).unwrap()), s);
        }
    }

    #[test_case("2MiB/min", 2.0 * 1024.0 * 1024.0 / 60.0)]
    #[test_case("1KiB/s", 1024.0)]
    #[test_case("100MB/10s", 1e7)]
    fn size_rates_parse(s: &str, expected: f64) {
        let got = parse_size_rate(s).unwrap();
        assert!((got - expected).abs() < 1e-6, "{s}: {got} != {expected}");
    }

    #[test_case("2MiB"; "no divisor")]
    #[test_case("2MiB/0s"; "zero window")]
    #[test_case("2MiB/fortnight"; "unknown unit")]
    fn bad_size_rates_are_refused(s: &str) {
        assert!(parse_size_rate(s).is_err(), "{s} parsed");
    }

    #[test]
    fn sizes_rates_and_percentages_format() {
        assert_eq!(format_size(256 * 1024 * 1024), "256MiB");
        assert_eq!(format_size(1000), "1000B");
        assert_eq!(
            format_size_rate(parse_size_rate("2MiB/min").unwrap()),
            "2MiB/min"
        );
        assert_eq!(format_percent(0.07), "7%");
        assert_eq!(format_percent(0.005), "0.5%");
        assert_eq!(format_number(0.1 + 0.2), "0.3");
    }

    #[test_case(Duration::from_micros(12_345), "12.35"; "rounded to two decimals")]
    #[test_case(Duration::ZERO, "0.00"; "zero")]
    #[test_case(Duration::from_secs(2), "2000.00"; "no change of unit")]
    fn millis_format_with_two_decimals(d: Duration, expected: &str) {
        assert_eq!(format_millis(d), expected);
    }
}
