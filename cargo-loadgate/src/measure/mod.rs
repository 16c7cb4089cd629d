//! Measurement: histograms, counters, windowed series and resource samples.
