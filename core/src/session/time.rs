//! Session start times for people: `YYYY-MM-DD HH:MM` in UTC, without a time crate.

/// `YYYY-MM-DD HH:MM` in UTC for milliseconds since the Unix epoch (listings and pickers).
pub fn utc_minutes(epoch_ms: u64) -> String {
    let minutes = epoch_ms / 60_000;
    let (hour, minute) = ((minutes / 60) % 24, minutes % 60);
    let (year, month, day) = civil_from_days(minutes / (60 * 24));
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
}

/// ISO 8601 in UTC to the second (`YYYY-MM-DDTHH:MM:SSZ`) for milliseconds since the Unix
/// epoch, as protocols such as ACP's `updatedAt` take it.
pub fn utc_iso8601(epoch_ms: u64) -> String {
    let seconds = epoch_ms / 1_000;
    let (hour, minute, second) = ((seconds / 3_600) % 24, (seconds / 60) % 60, seconds % 60);
    let (year, month, day) = civil_from_days(seconds / 86_400);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::{utc_iso8601, utc_minutes};

    #[test]
    fn epoch_milliseconds_become_iso_8601_seconds_in_utc() {
        assert_eq!(utc_iso8601(1_709_251_199_999), "2024-02-29T23:59:59Z");
        assert_eq!(utc_iso8601(0), "1970-01-01T00:00:00Z");
    }

    #[test]
    fn epoch_milliseconds_become_utc_minutes_across_leap_days_and_centuries() {
        let cases = [0, 1_709_251_140_000, 951_868_800_000, 4_133_939_640_000];
        assert_eq!(
            cases.map(utc_minutes),
            [
                "1970-01-01 00:00",
                "2024-02-29 23:59",
                "2000-03-01 00:00",
                "2100-12-31 12:34"
            ]
            .map(String::from)
        );
    }
}
