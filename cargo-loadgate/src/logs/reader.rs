//! Reading log files: plain or gzip (detected by their magic bytes), many files in time order
//! (ordered by the first time each holds), one line at a time into one reused buffer, so memory is
//! flat in log size. Malformed lines are counted and the first few kept with their place; the read
//! fails only when more than [`MAX_BAD_SHARE`] of the lines are malformed.

use super::error::{BadSample, LogError};
use super::parse::{JsonFields, LogFormat, LogLine, parse_line};
use flate2::read::MultiGzDecoder;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The share of malformed lines above which a read fails: beyond it the format is most likely the
/// wrong one, and a model from the rest would describe an unknown part of the traffic.
pub const MAX_BAD_SHARE: f64 = 0.05;

/// How many malformed lines are shown.
pub const BAD_SAMPLES: usize = 5;

/// Bytes read per system call.
const READ_BUFFER: usize = 1 << 20;

/// What a read saw.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ScanSummary {
    /// The files, in the order they were read (time order).
    pub files: Vec<PathBuf>,
    /// The format the lines were read in.
    pub format: Option<LogFormat>,
    /// Non-empty lines.
    pub lines: u64,
    /// Bytes of the files, uncompressed.
    pub bytes: u64,
    /// Malformed lines.
    pub bad_lines: u64,
    /// The first few of them.
    pub bad_samples: Vec<BadSample>,
    /// The first request's start, in microseconds since the epoch.
    pub first_us: Option<i64>,
    /// The last request's start.
    pub last_us: Option<i64>,
}

fn open(path: &Path) -> Result<Box<dyn BufRead>, LogError> {
    let io = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io)?;
    let file = File::open(path).map_err(io)?;
    Ok(if n == 2 && magic == [0x1f, 0x8b] {
        Box::new(BufReader::with_capacity(
            READ_BUFFER,
            MultiGzDecoder::new(BufReader::with_capacity(READ_BUFFER, file)),
        ))
    } else {
        Box::new(BufReader::with_capacity(READ_BUFFER, file))
    })
}

/// Reads the next line into `buf` without its line break; `false` at the end.
fn next_line(reader: &mut dyn BufRead, buf: &mut Vec<u8>, path: &Path) -> Result<bool, LogError> {
    buf.clear();
    let n = reader
        .read_until(b'\n', buf)
        .map_err(|source| LogError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    while buf.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        buf.pop();
    }
    Ok(n > 0)
}

/// The format of a line: JSON when it starts with `{`, combined when it reads as combined,
/// common otherwise.
fn detect(line: &[u8], fields: &JsonFields) -> LogFormat {
    if line.first() == Some(&b'{') {
        LogFormat::Json
    } else if parse_line(LogFormat::Combined, fields, line, &mut None).is_ok() {
        LogFormat::Combined
    } else {
        LogFormat::Common
    }
}

/// The first time in `path` and the format of its first non-empty line.
fn first_time(
    path: &Path,
    format: Option<LogFormat>,
    fields: &JsonFields,
) -> Result<(Option<i64>, Option<LogFormat>), LogError> {
    let mut reader = open(path)?;
    let mut buf = Vec::new();
    let mut detected = format;
    for _ in 0..1_000 {
        if !next_line(reader.as_mut(), &mut buf, path)? {
            break;
        }
        if buf.is_empty() {
            continue;
        }
        let f = *detected.get_or_insert_with(|| detect(&buf, fields));
        if let Ok(line) = parse_line(f, fields, &buf, &mut None) {
            return Ok((Some(line.time_us), detected));
        }
    }
    Ok((None, detected))
}

/// Reads every line of `paths` in time order and calls `visit` with each well-formed one.
///
/// `format` `None` detects it from the first line of the earliest file.
pub fn scan(
    paths: &[PathBuf],
    format: Option<LogFormat>,
    fields: &JsonFields,
    mut visit: impl FnMut(&LogLine<'_>),
) -> Result<ScanSummary, LogError> {
    let mut ordered = Vec::with_capacity(paths.len());
    let mut format = format;
    for path in paths {
        let (first, detected) = first_time(path, format, fields)?;
        ordered.push((first.unwrap_or(i64::MAX), path.clone(), detected));
    }
    ordered.sort_by_key(|(first, _, _)| *first);
    if format.is_none() {
        format = ordered.iter().find_map(|(_, _, f)| *f);
    }
    let format = format.unwrap_or(LogFormat::Combined);
    let mut summary = ScanSummary {
        format: Some(format),
        ..ScanSummary::default()
    };
    let mut buf = Vec::with_capacity(4096);
    let mut scratch = None;
    for (_, path, _) in ordered {
        let mut reader = open(&path)?;
        let mut number = 0u64;
        while next_line(reader.as_mut(), &mut buf, &path)? {
            number += 1;
            summary.bytes += buf.len() as u64 + 1;
            if buf.is_empty() {
                continue;
            }
            summary.lines += 1;
            match parse_line(format, fields, &buf, &mut scratch) {
                Ok(line) => {
                    summary.first_us.get_or_insert(line.time_us);
                    summary.last_us = Some(
                        summary
                            .last_us
                            .map_or(line.time_us, |l| l.max(line.time_us)),
                    );
                    visit(&line);
                }
                Err(why) => {
                    summary.bad_lines += 1;
                    if summary.bad_samples.len() < BAD_SAMPLES {
                        let text = String::from_utf8_lossy(&buf);
                        summary.bad_samples.push(BadSample {
                            file: path.clone(),
                            line: number,
                            why: why.describe().to_owned(),
                            text: text.chars().take(160).collect(),
                        });
                    }
                }
            }
        }
        summary.files.push(path);
    }
    if summary.lines > 0 && summary.bad_lines as f64 > MAX_BAD_SHARE * summary.lines as f64 {
        return Err(LogError::TooManyBad {
            bad: summary.bad_lines,
            lines: summary.lines,
            format,
            samples: summary.bad_samples,
        });
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(t: i64, path: &str) -> String {
        format!(
            "10.0.0.1 - - [{}] \"GET {path} HTTP/1.1\" 200 5 \"-\" \"ua\" rt=0.001\n",
            super::super::parse::format_clf_time(t)
        )
    }

    #[test]
    fn files_are_read_in_time_order_gzip_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let late = dir.path().join("access.log");
        let early = dir.path().join("access.log.1.gz");
        std::fs::write(&late, line(2_000_000, "/b") + &line(3_000_000, "/c")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            File::create(&early).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(line(1_000_000, "/a").as_bytes()).unwrap();
        gz.finish().unwrap();
        let mut seen = Vec::new();
        let summary = scan(
            &[late.clone(), early.clone()],
            None,
            &JsonFields::default(),
            |l| seen.push(String::from_utf8_lossy(l.path).into_owned()),
        )
        .unwrap();
        assert_eq!(seen, ["/a", "/b", "/c"]);
        assert_eq!(summary.files, [early, late]);
        assert_eq!(summary.format, Some(LogFormat::Combined));
        assert_eq!(
            (summary.first_us, summary.last_us),
            (Some(1_000_000), Some(3_000_000))
        );
    }

    #[test]
    fn bad_lines_are_counted_and_shown_until_there_are_too_many() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let mut text: String = (0..40).map(|i| line(i * 1_000_000, "/")).collect();
        text.push_str("not a log line\n");
        std::fs::write(&path, &text).unwrap();
        let summary = scan(
            std::slice::from_ref(&path),
            None,
            &JsonFields::default(),
            |_| {},
        )
        .unwrap();
        assert_eq!((summary.lines, summary.bad_lines), (41, 1));
        assert_eq!(summary.bad_samples[0].line, 41);
        assert_eq!(summary.bad_samples[0].text, "not a log line");
        text.push_str("garbage\ngarbage\n");
        std::fs::write(&path, &text).unwrap();
        let err = scan(&[path], None, &JsonFields::default(), |_| {}).unwrap_err();
        assert!(
            matches!(
                err,
                LogError::TooManyBad {
                    bad: 3,
                    lines: 43,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("3 of 43 lines"), "{err}");
    }

    #[test]
    fn a_missing_file_names_itself() {
        let err = scan(
            &[PathBuf::from("/nonexistent/x.log")],
            None,
            &JsonFields::default(),
            |_| {},
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/x.log"), "{err}");
    }
}
