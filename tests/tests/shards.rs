//! Shards end to end (issue 18): four `run --shard i/4` processes against one logging server on
//! loopback send exactly the (session, step) pairs the single run's schedule makes due before the
//! phase ends, each once; `merge` combines them, and refuses bad sets naming every problem.

use cargo_loadgate::engine::PhaseSpec;
use loadgate_tests::{LoadgateCommand, assert_matches_result_schema, load_lock, read_result};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Exit codes from `cli::ExitCode`, restated on purpose.
mod code {
    pub const PASS: i32 = 0;
    pub const USAGE: i32 = 2;
    pub const INVALID_RUN: i32 = 21;
}

/// A shard or merge on a machine so busy that the generator fell behind its schedule exits
/// `INVALID_RUN`: an open loop still sends every due request (late), which is what is checked.
const RAN: [Option<i32>; 2] = [Some(code::PASS), Some(code::INVALID_RUN)];

/// A keep-alive HTTP/1.1 server on 127.0.0.1 answering `200 ok` to everything and logging the
/// path of every request it receives.
struct LoggingServer {
    url: String,
    paths: Arc<Mutex<Vec<String>>>,
}

impl LoggingServer {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let paths = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&paths);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        Self { url, paths }
    }

    fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

fn serve(stream: std::net::TcpStream, log: &Mutex<Vec<String>>) {
    let mut writer = stream.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        // Headers up to the blank line; the workload's requests carry no body.
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
        }
        if let Some(path) = request_line.split_whitespace().nth(1) {
            log.lock().unwrap().push(path.to_owned());
        }
        if writer
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .is_err()
        {
            return;
        }
    }
}

/// One ramp step of 3 s after a 0.5 s warm-up, no soak: sessions of one to three steps whose
/// paths name the session and the step.
fn config(url: &str) -> String {
    format!(
        r#"[target]
url = "{url}"
ready = {{ http = "/health", timeout = "5s" }}

[slo]
min-requests = 10

[workload]
seed = 18
sessions-per-sec = 40
entry = "first"

[[workload.operation]]
name = "first"
request = {{ path = "/s/{{{{session}}}}/{{{{seq}}}}" }}
next = [{{ to = "again", p = 0.7, think = "300ms" }}]

[[workload.operation]]
name = "again"
request = {{ path = "/s/{{{{session}}}}/{{{{seq}}}}" }}
next = [{{ to = "again", p = 0.5, think = "300ms" }}]

[ramp]
steps = ["100%"]
hold = "3s"
warmup = "500ms"
refine = 0

[soak]
duration = "0s"

# Behaviour, not pacing, on a busy machine running four debug-built shards.
[generator]
max-lag = "500ms"
"#
    )
}

/// How much later than its schedule's think times alone a step may come: the latency of the
/// steps before it in its session, on a busy machine running four debug-built shards.
const LATENCY_ALLOWANCE: Duration = Duration::from_millis(500);

/// When the one phase stops making arrivals: after its warm-up and hold.
fn phase_end(config_path: &Path) -> Duration {
    let config = load(config_path);
    config.ramp.warmup + config.ramp.hold
}

fn load(config_path: &Path) -> cargo_loadgate::config::LoadgateConfig {
    cargo_loadgate::config::load(&cargo_loadgate::config::LoadOpts {
        manifest_path: None,
        package: None,
        config: Some(config_path.to_owned()),
        profile: None,
        cwd: config_path.parent().unwrap().to_owned(),
    })
    .expect("the config loads")
}

/// The (session, step) pairs the whole schedule of the one phase makes due before it ends, each
/// with the time it is due if every answer came at once: step n of session k is intended at the
/// answer of step n − 1 plus its think time (open loop).
fn due_pairs(config_path: &Path) -> BTreeMap<(u64, u32), Duration> {
    let config = load(config_path);
    let spec = PhaseSpec {
        name: "ramp-100%".into(),
        sessions_per_sec: config.workload.sessions_per_sec,
        duration: config.ramp.hold,
        warmup: config.ramp.warmup,
        seed: config.workload.seed,
        first_session: 0,
        keep_window_histograms: true,
    };
    let end = spec.warmup + spec.duration;
    let mut due = BTreeMap::new();
    for session in spec.schedule(&config.workload).sessions() {
        let mut intended = session.start;
        for (seq, step) in session.steps().iter().enumerate() {
            intended += step.think_before;
            if seq > 0 && intended >= end {
                break;
            }
            due.insert((session.index, seq as u32), intended);
        }
    }
    due
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[test]
fn four_shards_send_the_schedule_once_and_merge() {
    let _load = load_lock();
    let server = LoggingServer::start();
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("loadgate.toml");
    std::fs::write(&config_path, config(&server.url)).unwrap();
    // Built before the clock starts; then time for four shards to start, check readiness and
    // calibrate, together.
    loadgate_tests::loadgate_bin();
    let start_at = (unix_ms() + 15_000).to_string();
    let children: Vec<_> = (0..4)
        .map(|i| {
            LoadgateCommand::new(["run", "--keep-going", "--start-at", &start_at, "--shard"])
                .arg_path(format!("{i}/4"))
                .args(["--config"])
                .arg_path(&config_path)
                .args(["--out-dir"])
                .arg_path(dir.path().join(format!("shard-{i}")))
                .spawn()
        })
        .collect();
    // Every shard is waited for before any is judged, so none outlives a failed assertion.
    let outs: Vec<_> = children
        .into_iter()
        .map(|child| child.wait_with_output().expect("the shard ran"))
        .collect();
    for (i, out) in outs.into_iter().enumerate() {
        assert!(
            RAN.contains(&out.status.code()),
            "shard {i}: exit {:?}\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // What the server received: the phase's pairs, none twice, none missing.
    let mut received: BTreeMap<(u64, u32), usize> = BTreeMap::new();
    for path in server.paths() {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        if let ["s", session, seq] = parts[..] {
            *received
                .entry((session.parse().unwrap(), seq.parse().unwrap()))
                .or_default() += 1;
        }
    }
    let due = due_pairs(&config_path);
    assert!(due.len() > 150, "{} pairs due", due.len());
    let twice: Vec<_> = received.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "sent twice: {twice:?}");
    // A later step is intended at the answer of the one before plus the think time, so a step
    // due (by the schedule's think times alone) just before the end may miss it by the latency of
    // the steps before it: only those may be missing.
    let missing: Vec<_> = due
        .iter()
        .filter(|(k, _)| !received.contains_key(k))
        .collect();
    let end = phase_end(&config_path);
    let late: Vec<_> = missing
        .iter()
        .filter(|(_, intended)| **intended + LATENCY_ALLOWANCE < end)
        .collect();
    let extra: Vec<_> = received.keys().filter(|k| !due.contains_key(k)).collect();
    assert!(
        late.is_empty() && extra.is_empty(),
        "the shards sent exactly the schedule's due pairs: missing {missing:?} (of which due \
         well before the end {late:?}), not due {extra:?}"
    );

    // Each shard recorded its slice; the merge adds them up.
    let shard_paths: Vec<PathBuf> = (0..4)
        .map(|i| dir.path().join(format!("shard-{i}/result.json")))
        .collect();
    for (i, _) in shard_paths.iter().enumerate() {
        let shard = read_result(&dir.path().join(format!("shard-{i}")));
        assert_matches_result_schema(&shard);
        assert_eq!(shard["shards"]["kind"], "shard");
        assert_eq!(shard["shards"]["index"], i);
        assert_eq!(shard["shards"]["owns_target"], i == 0);
    }
    let merged_dir = dir.path().join("merged");
    let out = LoadgateCommand::new(["merge", "--config"])
        .arg_path(&config_path)
        .args(["--out-dir"])
        .arg_path(&merged_dir)
        .args(shard_paths.iter().rev())
        .output();
    assert!(RAN.contains(&out.code), "{out:?}");
    let merged = read_result(&merged_dir);
    assert_matches_result_schema(&merged);
    assert_eq!(merged["shards"]["kind"], "merged");
    assert_eq!(merged["shards"]["count"], 4);
    let phase = &merged["phases"][0];
    assert_eq!(phase["name"], "ramp-100%");
    let measured_sent: u64 = phase["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["counters"]["sent"].as_u64().unwrap())
        .sum();
    let shard_sent: u64 = merged["shards"]["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(phase["requests_total"].as_u64().unwrap(), shard_sent);
    assert!(measured_sent > 0 && measured_sent <= shard_sent);
    assert!(merged["ramp"]["steps"][0]["phase"] == "ramp-100%");
    let junit = std::fs::read(merged_dir.join("junit.xml")).unwrap();
    junit_parser::from_reader(std::io::Cursor::new(junit)).expect("the merged JUnit parses");

    // Bad input: shard 3 missing and shard 1 given twice, both named, exit 2.
    let out = LoadgateCommand::new(["merge", "--config"])
        .arg_path(&config_path)
        .args(["--out-dir"])
        .arg_path(dir.path().join("bad"))
        .args([
            &shard_paths[0],
            &shard_paths[1],
            &shard_paths[1],
            &shard_paths[2],
        ])
        .output();
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("shard 3/4 is missing"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("shard 1 is given twice"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("2 problems"), "{}", out.stderr);
}

#[test]
fn a_shard_needs_a_url_target_and_a_start_to_come() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("loadgate.toml");
    std::fs::write(&config_path, config("http://127.0.0.1:9")).unwrap();
    let run = |args: &[&str]| {
        LoadgateCommand::new(["run", "--keep-going", "--config"])
            .arg_path(&config_path)
            .args(["--out-dir"])
            .arg_path(dir.path())
            .args(args)
            .output()
    };
    let out = run(&["--shard", "4/4", "--start-at", "0"]);
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("shards are numbered 0 to 3"),
        "{}",
        out.stderr
    );
    let out = run(&["--shard", "0/0", "--start-at", "0"]);
    out.assert_code(code::USAGE);
    let out = run(&["--shard", "0/2", "--start-at", "0", "--target", "process"]);
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("--shard needs a url target"),
        "{}",
        out.stderr
    );
    let years_ahead = (unix_ms() * 1000).to_string(); // microseconds, not milliseconds
    let out = run(&["--shard", "0/2", "--start-at", &years_ahead]);
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("s ahead, more than 3600 s"),
        "{}",
        out.stderr
    );
    let past = (unix_ms() - 60_000).to_string();
    let out = run(&["--shard", "0/2", "--start-at", &past]);
    out.assert_code(code::USAGE);
    assert!(
        out.stderr.contains("more than --max-skew"),
        "{}",
        out.stderr
    );
}
