//! A latency histogram in microseconds: HdrHistogram with 3 significant digits, mergeable, and
//! serialized as V2+DEFLATE in base64 for the result JSON.

use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use serde::{
    Deserialize, Deserializer as SerdeDeserializer, Serialize, Serializer as SerdeSerializer,
};
use std::time::Duration;

/// The largest value recorded, in microseconds (one hour); larger values saturate to it.
const MAX_MICROS: u64 = 3_600_000_000;

/// Significant decimal digits kept by every histogram (DESIGN §5).
const SIGFIG: u8 = 3;

/// A histogram of durations, recorded in whole microseconds.
///
/// It starts small and grows with the largest value recorded, so a phase of fast requests costs a
/// few kilobytes. Values are clamped to `[1 µs, 1 h]`.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
}

/// Why a serialized histogram could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum HistogramDecodeError {
    /// The text is not valid base64.
    #[error("histogram is not valid base64")]
    Base64(#[source] base64::DecodeError),
    /// The bytes are not a V2+DEFLATE HdrHistogram.
    #[error("histogram is not a V2+DEFLATE HdrHistogram")]
    Format(#[source] hdrhistogram::serialization::DeserializeError),
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl LatencyHistogram {
    /// Creates an empty histogram.
    pub fn new() -> Self {
        // `new` builds an auto-resizing histogram with a lowest discernible value of 1; it fails only
        // for a sigfig above 5.
        let inner = Histogram::<u64>::new(SIGFIG).expect("3 significant digits are valid");
        Self { inner }
    }

    /// Records one duration.
    pub fn record(&mut self, value: Duration) {
        self.record_micros(to_micros(value));
    }

    /// Records one value given in microseconds.
    pub fn record_micros(&mut self, micros: u64) {
        // Not `saturating_record`: it never resizes, and this histogram grows on demand. Growing
        // to one hour cannot overflow a usize, so the error case does not happen.
        let _ = self.inner.record(micros.clamp(1, MAX_MICROS));
    }

    /// Adds every value of `other` to this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both histograms auto-resize, so adding cannot run out of range.
        let _ = self.inner.add(&other.inner);
    }

    /// The number of values recorded.
    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The value at quantile `q` (0 ≤ q ≤ 1), or zero when empty.
    pub fn quantile(&self, q: f64) -> Duration {
        if self.inner.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_micros(self.inner.value_at_quantile(q.clamp(0.0, 1.0)))
    }

    /// The largest value recorded (to the histogram's precision), or zero when empty.
    pub fn max(&self) -> Duration {
        if self.inner.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_micros(self.inner.max())
    }

    /// The mean of the values recorded, or zero when empty.
    pub fn mean(&self) -> Duration {
        if self.inner.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_secs_f64(self.inner.mean() / 1e6)
    }

    /// Removes every value, keeping the allocation.
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// The underlying HdrHistogram, in microseconds.
    pub fn as_hdr(&self) -> &Histogram<u64> {
        &self.inner
    }

    /// Serializes as V2+DEFLATE, base64 (standard alphabet, padded).
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        // Writing to a Vec cannot fail, and the V2 format can hold any u64 histogram.
        let _ = V2DeflateSerializer::new().serialize(&self.inner, &mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads a histogram written by [`LatencyHistogram::encode`] (or any V2+DEFLATE HdrHistogram).
    pub fn decode(text: &str) -> Result<Self, HistogramDecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(HistogramDecodeError::Base64)?;
        let mut inner: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(HistogramDecodeError::Format)?;
        inner.auto(true);
        Ok(Self { inner })
    }
}

/// A duration in whole microseconds, clamped to the histogram's range.
pub fn to_micros(value: Duration) -> u64 {
    u64::try_from(value.as_micros())
        .unwrap_or(MAX_MICROS)
        .clamp(1, MAX_MICROS)
}

impl Serialize for LatencyHistogram {
    fn serialize<S: SerdeSerializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.encode())
    }
}

impl<'de> Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: SerdeDeserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_case::test_case;

    fn filled(values_ms: &[u64]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for v in values_ms {
            h.record(Duration::from_millis(*v));
        }
        h
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut h = LatencyHistogram::new();
        for i in 1..=10_000u64 {
            h.record_micros(i * 37 % 900_000 + 1);
        }
        let text = h.encode();
        let back = LatencyHistogram::decode(&text).expect("decodes");
        assert_eq!(back, h);
        assert_eq!(back.count(), 10_000);
        assert_eq!(back.quantile(0.99), h.quantile(0.99));
    }

    #[test]
    fn serde_round_trip_through_json() {
        let h = filled(&[1, 2, 3, 500]);
        let json = serde_json::to_string(&h).expect("serializes");
        let back: LatencyHistogram = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, h);
    }

    #[test_case("not base64 !!" ; "bad base64")]
    #[test_case("aGVsbG8gd29ybGQ=" ; "base64 of something else")]
    fn decode_rejects_garbage(text: &str) {
        assert!(LatencyHistogram::decode(text).is_err());
    }

    #[test]
    fn merge_adds_counts_and_extends_range() {
        let mut a = filled(&[1, 2, 3]);
        let b = filled(&[10_000, 20_000]);
        a.merge(&b);
        assert_eq!(a.count(), 5);
        let max = a.max().as_millis();
        assert!((19_990..=20_020).contains(&max), "max {max}");
    }

    #[test]
    fn percentiles_are_monotonic() {
        let mut h = LatencyHistogram::new();
        let mut x: u64 = 12345;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            h.record_micros((x >> 40) % 2_000_000 + 1);
        }
        let qs = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0];
        let values: Vec<Duration> = qs.iter().map(|q| h.quantile(*q)).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
        assert!(h.quantile(1.0) <= h.max());
    }

    #[test_case(0, 1 ; "zero clamps to one microsecond")]
    #[test_case(7_200_000_000, 3_600_000_000 ; "two hours clamps to one hour")]
    fn values_are_clamped(micros: u64, expected_upper: u64) {
        let mut h = LatencyHistogram::new();
        h.record(Duration::from_micros(micros));
        let max = u64::try_from(h.max().as_micros()).unwrap_or(u64::MAX);
        // Three significant digits: the reported value is within 0.1% of the clamped one.
        assert!(
            max.abs_diff(expected_upper) <= expected_upper / 1000 + 1,
            "{max}"
        );
    }

    #[test]
    fn empty_histogram_reports_zero() {
        let h = LatencyHistogram::new();
        assert_eq!(h.quantile(0.99), Duration::ZERO);
        assert_eq!(h.max(), Duration::ZERO);
        assert!(h.is_empty());
    }
}
