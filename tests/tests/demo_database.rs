//! The demo service's Postgres storage mode (`DATABASE_URL` set, issue 16): its tables serve the
//! demo's own workload, idempotency is the database's unique index, and `DEMO_DB_NO_INDEX=1`
//! really removes the index the transactions route is served by (checked in pg's catalog and in
//! the plan). Each test starts its own PostgreSQL ([`TempPostgres`]) and removes it.
//!
//! They need the PostgreSQL server binaries (`.ci/run` installs Debian's `postgresql`); without
//! them the tests say so loudly, and in CI (`CI` set) they fail.

use loadgate_tests::{
    DemoProcess, LoadgateCommand, TempPostgres, load_lock, postgres_or_skip, read_result,
};

const PASS: i32 = 0;

/// The demo's own workload (everything from `[workload]` up to `[gate]` in its loadgate.toml)
/// against the already running demo at `url`, with the test suite's relaxed lag limit.
fn demo_workload_config(url: &str) -> String {
    let demo = std::fs::read_to_string(
        loadgate_tests::workspace_root().join("fixtures/demo-service/loadgate.toml"),
    )
    .expect("read the demo's loadgate.toml");
    let start = demo
        .find("\n[workload]")
        .expect("the demo has a [workload]");
    let end = demo.find("\n[gate]").expect("the demo has a [gate]");
    format!(
        "[target]\nurl = \"{url}\"\nready = {{ http = \"/health\", timeout = \"5s\" }}\n\
         [slo]\nmin-requests = 10\n{}\n[generator]\nmax-lag = \"250ms\"\n",
        &demo[start..end]
    )
}

#[test]
fn the_demo_in_database_mode_passes_its_workload_from_tables() {
    if !postgres_or_skip("the_demo_in_database_mode_passes_its_workload_from_tables") {
        return;
    }
    let _lock = load_lock();
    let pg = TempPostgres::start();
    let demo = DemoProcess::start(&[("DATABASE_URL", &pg.url())]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("loadgate.toml");
    std::fs::write(&path, demo_workload_config(&demo.url)).unwrap();
    let out = LoadgateCommand::new(["run", "--profile", "quick", "--config"])
        .arg_path(&path)
        .args(["--out-dir"])
        .arg_path(dir.path())
        .output();
    out.assert_code(PASS);
    let result = read_result(dir.path());
    let mut answered = std::collections::BTreeMap::new();
    for phase in result["phases"].as_array().expect("phases") {
        for op in phase["operations"].as_array().expect("operations") {
            let counters = &op["counters"];
            let name = op["name"].as_str().expect("operation name").to_owned();
            assert_eq!(
                counters["ok"], counters["sent"],
                "{name} had errors: {counters}"
            );
            assert_eq!(counters["wrong_answer"], 0, "{name}: {counters}");
            *answered.entry(name).or_insert(0) += counters["ok"].as_u64().unwrap_or(0);
        }
    }
    for name in ["login", "accounts", "transactions"] {
        assert!(
            answered.get(name).copied().unwrap_or(0) > 0,
            "no {name}: {answered:?}"
        );
    }
    // The answers came from the tables: every logged-in user's 3 accounts and 60 transactions.
    let users: i64 = pg
        .psql("SELECT count(DISTINCT owner) FROM accounts")
        .parse()
        .unwrap();
    assert!(users > 0, "no accounts were written");
    assert_eq!(
        pg.psql("SELECT count(*) FROM accounts"),
        (users * 3).to_string()
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM transactions"),
        (users * 60).to_string()
    );
    // Every transfer booked once: the workload's keys are unique, so effects = distinct keys.
    let (effects, firsts) = pg
        .psql("SELECT count(*) || ' ' || count(*) FILTER (WHERE first) FROM transfers")
        .split_once(' ')
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .unwrap();
    assert_eq!(effects, firsts);
}

/// The index `DEMO_DB_NO_INDEX` is about, as pg's catalog lists it on `transactions`.
fn transactions_indexes(pg: &TempPostgres) -> String {
    pg.psql("SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE tablename = 'transactions'")
}

/// The plan of the transactions route's query, sequential scans allowed or not.
fn transactions_plan(pg: &TempPostgres) -> String {
    pg.psql(
        "EXPLAIN SELECT id, booked_on, description, amount_cents FROM transactions \
         WHERE account_id = 'acc-000000000000-1' ORDER BY position",
    )
}

#[test]
fn demo_db_no_index_drops_the_transactions_index_and_its_absence_is_undone() {
    if !postgres_or_skip("demo_db_no_index_drops_the_transactions_index_and_its_absence_is_undone")
    {
        return;
    }
    let pg = TempPostgres::start();
    {
        let _demo = DemoProcess::start(&[("DATABASE_URL", &pg.url())]);
        // Enough rows that the planner prefers the index when there is one.
        pg.psql(
            "INSERT INTO transactions SELECT 'txn-seed-' || i, 'acc-seed-' || (i / 20), i % 20, \
             '2026-02-01', 'Seed', i FROM generate_series(1, 20000) AS i; ANALYZE transactions",
        );
    }
    assert_eq!(
        transactions_indexes(&pg),
        "transactions_account_idx,transactions_pkey"
    );
    assert!(transactions_plan(&pg).contains("transactions_account_idx"));
    {
        let _demo = DemoProcess::start(&[("DATABASE_URL", &pg.url()), ("DEMO_DB_NO_INDEX", "1")]);
        assert_eq!(transactions_indexes(&pg), "transactions_pkey");
        let plan = transactions_plan(&pg);
        assert!(plan.contains("Seq Scan on transactions"), "{plan}");
    }
    // Without the knob the index comes back: a NO_INDEX run does not spoil the next one.
    let _demo = DemoProcess::start(&[("DATABASE_URL", &pg.url())]);
    assert_eq!(
        transactions_indexes(&pg),
        "transactions_account_idx,transactions_pkey"
    );
}

#[test]
fn the_demo_refuses_a_bad_db_no_index_value_or_one_without_a_database() {
    for (env, expected) in [
        (
            vec![("DEMO_DB_NO_INDEX", "yes")],
            "DEMO_DB_NO_INDEX must be 0 or 1",
        ),
        (
            vec![("DEMO_DB_NO_INDEX", "1")],
            "DEMO_DB_NO_INDEX=1 needs DATABASE_URL",
        ),
    ] {
        let out = std::process::Command::new(loadgate_tests::demo_bin())
            .env("PORT", "0")
            .env("DEMO_BIND", "127.0.0.1")
            .env_remove("DATABASE_URL")
            .envs(env)
            .output()
            .expect("run the demo");
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(expected), "{stderr}");
    }
}

#[test]
fn idempotency_keys_are_a_unique_index_in_the_database() {
    if !postgres_or_skip("idempotency_keys_are_a_unique_index_in_the_database") {
        return;
    }
    let pg = TempPostgres::start();
    let _demo = DemoProcess::start(&[("DATABASE_URL", &pg.url())]);
    assert_eq!(
        pg.psql(
            "SELECT indisunique FROM pg_index WHERE indexrelid = 'transfers_key_idx'::regclass"
        ),
        "t"
    );
    pg.psql(
        "INSERT INTO transfers (user_name, idem_key, first, from_account, to_account, amount_cents) \
         VALUES ('alice', 'k-1', true, 'a', 'b', 1)",
    );
    let second = pg
        .psql_command()
        .arg("-c")
        .arg(
            "INSERT INTO transfers (user_name, idem_key, first, from_account, to_account, \
             amount_cents) VALUES ('alice', 'k-1', true, 'a', 'b', 1)",
        )
        .output()
        .expect("run psql");
    assert!(!second.status.success());
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("transfers_key_idx"),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
}

/// Runs the demo's schema and its seed file with `seed` for 200 accounts; the checksum it prints.
fn seed(pg: &TempPostgres, seed: &str) -> String {
    let sql = loadgate_tests::workspace_root().join("fixtures/demo-service/sql");
    let out = pg
        .psql_command()
        .arg("-q")
        .args(["-v", &format!("seed={seed}"), "-v", "accounts=200"])
        .arg("-f")
        .arg(sql.join("schema.sql"))
        .arg("-f")
        .arg(sql.join("seed.sql"))
        .output()
        .expect("run psql");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_seed_file_gives_the_same_rows_for_a_seed_and_other_rows_for_another() {
    if !postgres_or_skip("the_seed_file_gives_the_same_rows_for_a_seed_and_other_rows_for_another")
    {
        return;
    }
    let pg = TempPostgres::start();
    let first = seed(&pg, "42");
    assert_eq!(first.len(), 32, "an md5 checksum: {first:?}");
    assert_eq!(pg.psql("SELECT count(*) FROM transactions"), "4000");
    pg.psql("TRUNCATE accounts, transactions");
    assert_eq!(seed(&pg, "42"), first, "the same seed, the same rows");
    pg.psql("TRUNCATE accounts, transactions");
    assert_ne!(seed(&pg, "43"), first, "another seed, other rows");
}
