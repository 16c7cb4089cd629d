//! What a person reads about a config: its problems in rustc's shape, and the resolved profile as
//! a TOML listing (for `cargo loadgate check`). Formatting only.

use super::elements::key::Section;
use super::elements::operation::{expected_requests_per_session, keys as op};
use super::elements::{
    abort, data, gate, generator, paired, ramp, recovery, retry, slo, soak, spike, stress, target,
    workload,
};
use super::error::{Diagnostic, Sources};
use super::types::*;
use super::units::{
    format_duration, format_factor, format_number, format_percent, format_size, format_size_rate,
};
use std::fmt::Write;

/// Renders every diagnostic the way rustc does (message, `-->` location, the source line with the
/// problem underlined, help), then a count line.
///
/// `sources` holds the text of the files the diagnostics name; a diagnostic whose file is missing
/// is shown without its source line.
pub fn render_diagnostics(diags: &[Diagnostic], sources: &Sources) -> String {
    let mut out = String::new();
    for d in diags {
        let width = d.line.to_string().len();
        let pad = " ".repeat(width);
        let _ = writeln!(out, "error: {}", d.message);
        let _ = writeln!(out, "{pad}--> {}:{}:{}", d.path.display(), d.line, d.col);
        let line = sources
            .get(&d.path)
            .and_then(|text| text.lines().nth(d.line - 1));
        if let Some(line) = line {
            let line = line.replace('\t', " ");
            let chars = line.chars().count();
            let start = d.col.saturating_sub(1).min(chars);
            let len = d.len.min(chars.saturating_sub(start)).max(1);
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{} | {}", d.line, line.trim_end());
            let _ = writeln!(out, "{pad} | {}{}", " ".repeat(start), "^".repeat(len));
        }
        if let Some(help) = &d.help {
            let indent = format!("\n{pad}   {}", " ".repeat("help: ".len()));
            let _ = writeln!(out, "{pad} = help: {}", help.replace('\n', &indent));
        }
        out.push('\n');
    }
    let count = diags.len();
    let _ = write!(
        out,
        "error: could not load the configuration: {count} problem{}",
        if count == 1 { "" } else { "s" }
    );
    out
}

/// Renders every resolved value of a profile as TOML, with a header saying where it came from and
/// the request rate the workload implies.
pub fn render_resolved(cfg: &LoadgateConfig) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# profile: {}", cfg.profile);
    let _ = write!(out, "# source: {}", cfg.source.path.display());
    match &cfg.source.package {
        Some(p) => {
            let _ = writeln!(out, " (package {})", p.name);
        }
        None => out.push('\n'),
    }

    let t = &cfg.target;
    section(&mut out, &target::SECTION);
    match &t.source {
        TargetSource::Bin { name } => kv(&mut out, target::BIN.name, &string(name)),
        TargetSource::Image { reference } => kv(&mut out, target::IMAGE.name, &string(reference)),
        TargetSource::Dockerfile { path, context } => {
            let path = string(&path.display().to_string());
            kv(&mut out, target::DOCKERFILE.name, &path);
            let context = string(&context.display().to_string());
            kv(&mut out, target::CONTEXT.name, &context);
        }
        TargetSource::Url { url } => kv(&mut out, target::URL.name, &string(url)),
    }
    kv(&mut out, target::PORT.name, &t.port.to_string());
    kv(
        &mut out,
        target::READY.name,
        &inline_table([
            (target::READY_HTTP.name, string(&t.ready.path)),
            (target::READY_TIMEOUT.name, duration(t.ready.timeout)),
            (target::READY_INTERVAL.name, duration(t.ready.interval)),
        ]),
    );
    if let Some(cpus) = t.cpus {
        kv(&mut out, target::CPUS.name, &float(cpus));
    }
    if let Some(bytes) = t.memory_bytes {
        kv(&mut out, target::MEMORY.name, &string(&format_size(bytes)));
    }
    kv(
        &mut out,
        target::ENV.name,
        &inline_table(t.env.iter().map(|(k, v)| (k.as_str(), string(v)))),
    );
    kv(&mut out, target::ARGS.name, &strings(&t.args));
    kv(&mut out, target::NETWORK.name, &string(t.network.as_str()));
    if t.replicas != 1 {
        kv(&mut out, target::REPLICAS.name, &t.replicas.to_string());
    }

    section(&mut out, &slo::SECTION);
    for l in &cfg.slo.latency {
        let key = slo::latency_key(l.quantile).map_or_else(
            || format!("p{}", format_number(l.quantile * 100.0).replace('.', "")),
            str::to_owned,
        );
        kv(&mut out, &key, &duration(l.limit));
    }
    kv(
        &mut out,
        slo::ERROR_RATE.name,
        &string(&format_percent(cfg.slo.error_rate)),
    );
    kv(
        &mut out,
        slo::MIN_REQUESTS.name,
        &cfg.slo.min_requests.to_string(),
    );
    if let Some(limit) = cfg.slo.headroom {
        kv(&mut out, slo::HEADROOM.name, &string(&format_factor(limit)));
    }
    if let Some(limit) = cfg.slo.recovery {
        kv(&mut out, slo::RECOVERY.name, &duration(limit));
    }

    let w = &cfg.workload;
    section(&mut out, &workload::SECTION);
    kv(&mut out, workload::SEED.name, &w.seed.to_string());
    kv(
        &mut out,
        workload::SESSIONS_PER_SEC.name,
        &float(w.sessions_per_sec),
    );
    let name = |i: usize| w.operations.get(i).map_or("?", |o| o.name.as_str());
    let entry = w
        .entry
        .iter()
        .map(|e| {
            inline_table([
                (op::TO, string(name(e.operation))),
                (op::WEIGHT, float(e.p)),
            ])
        })
        .collect::<Vec<_>>()
        .join(", ");
    kv(&mut out, workload::ENTRY.name, &format!("[{entry}]"));
    let per_session = expected_requests_per_session(&w.entry, &w.operations);
    let _ = writeln!(
        out,
        "# ≈ {} requests per session, so ≈ {} requests/s at 100%",
        format_number((per_session * 100.0).round() / 100.0),
        format_number((per_session * w.sessions_per_sec).round())
    );
    for operation in &w.operations {
        let _ = writeln!(
            out,
            "\n[[{}.{}]]",
            workload::SECTION.name,
            workload::OPERATION.name
        );
        kv(&mut out, op::NAME, &string(&operation.name));
        kv(&mut out, op::REQUEST, &request_table(&operation.request));
        let _ = writeln!(out, "{}", expect_line(&operation.expect));
        if !operation.capture.is_empty() {
            kv(
                &mut out,
                op::CAPTURE,
                &inline_table(
                    operation
                        .capture
                        .iter()
                        .map(|c| (c.variable.as_str(), string(&c.pointer))),
                ),
            );
        }
        let rest = 1.0 - operation.next.iter().map(|t| t.p).sum::<f64>();
        if operation.next.is_empty() {
            let _ = writeln!(out, "{} = []  # the session ends here", op::NEXT);
        } else {
            let _ = writeln!(out, "{} = [", op::NEXT);
            for t in &operation.next {
                let next = inline_table([
                    (op::TO, string(name(t.to))),
                    (op::P, float(t.p)),
                    (op::THINK, think(&t.think)),
                ]);
                let _ = writeln!(out, "  {next},");
            }
            let _ = writeln!(out, "]  # p {} ends the session", float(rest.max(0.0)));
        }
        // Shown only when set: an operation is secondary unless gated.
        if operation.gate {
            kv(&mut out, op::GATE, "true");
        }
        match &operation.retry {
            OperationRetry::Inherit => {}
            OperationRetry::Off => kv(&mut out, op::RETRY, "false"),
            OperationRetry::Policy(policy) => kv(&mut out, op::RETRY, &retry_table(policy)),
        }
        if operation.idempotent {
            kv(&mut out, op::IDEMPOTENT, "true");
        }
    }

    let g = &cfg.generator;
    section(&mut out, &generator::SECTION);
    kv(&mut out, generator::TIMEOUT.name, &duration(g.timeout));
    kv(
        &mut out,
        generator::MAX_IN_FLIGHT.name,
        &g.max_in_flight.to_string(),
    );
    kv(&mut out, generator::MAX_LAG.name, &duration(g.max_lag));
    kv(
        &mut out,
        generator::MAX_DROP_RATE.name,
        &string(&format_percent(g.max_drop_rate)),
    );
    kv(
        &mut out,
        generator::CONNECTIONS.name,
        &g.connections.to_string(),
    );
    kv(
        &mut out,
        generator::THREADS.name,
        &match g.threads {
            GeneratorThreads::Auto => string("auto"),
            GeneratorThreads::Count(n) => n.to_string(),
        },
    );
    if let Some(policy) = &g.retry {
        kv(&mut out, generator::RETRY.name, &retry_table(policy));
    }
    if let Some(policy) = &g.failover {
        kv(&mut out, generator::FAILOVER.name, &failover_table(policy));
    }

    let r = &cfg.ramp;
    section(&mut out, &ramp::SECTION);
    let steps = r
        .steps
        .iter()
        .map(|s| string(&format_percent(*s)))
        .collect::<Vec<_>>()
        .join(", ");
    kv(&mut out, ramp::STEPS.name, &format!("[{steps}]"));
    kv(&mut out, ramp::HOLD.name, &duration(r.hold));
    kv(&mut out, ramp::WARMUP.name, &duration(r.warmup));
    kv(&mut out, ramp::REFINE.name, &r.refine.to_string());

    let s = &cfg.soak;
    section(&mut out, &soak::SECTION);
    kv(&mut out, soak::DURATION.name, &duration(s.duration));
    kv(&mut out, soak::AT.name, &string(&format_percent(s.at)));
    kv(&mut out, soak::WINDOW.name, &duration(s.window));

    let spk = &cfg.spike;
    section(&mut out, &spike::SECTION);
    kv(&mut out, spike::TO.name, &string(&format_percent(spk.to)));
    kv(&mut out, spike::FOR.name, &duration(spk.duration));
    kv(&mut out, spike::BEFORE.name, &duration(spk.before));
    kv(&mut out, spike::AFTER.name, &duration(spk.after));

    let st = &cfg.stress;
    section(&mut out, &stress::SECTION);
    kv(&mut out, stress::TO.name, &string(&format_percent(st.to)));
    kv(&mut out, stress::FOR.name, &duration(st.duration));
    kv(&mut out, stress::BEFORE.name, &duration(st.before));
    kv(&mut out, stress::AFTER.name, &duration(st.after));

    section(&mut out, &recovery::SECTION);
    kv(
        &mut out,
        recovery::WINDOWS.name,
        &cfg.recovery.windows.to_string(),
    );

    let a = &cfg.abort;
    section(&mut out, &abort::SECTION);
    kv(
        &mut out,
        abort::ERROR_RATE.name,
        &string(&format_percent(a.error_rate_limit)),
    );
    kv(&mut out, abort::P99.name, &duration(a.p99_limit));
    kv(
        &mut out,
        abort::MAX_DURATION.name,
        &duration(a.max_duration),
    );

    let g = &cfg.gate;
    section(&mut out, &gate::SECTION);
    kv(
        &mut out,
        gate::P50.name,
        &string(&format_percent(g.p50_change)),
    );
    kv(
        &mut out,
        gate::P99.name,
        &string(&format_percent(g.p99_change)),
    );
    kv(
        &mut out,
        gate::CAPACITY.name,
        &string(&format_percent(g.capacity_loss)),
    );
    kv(
        &mut out,
        gate::ERROR_RATE.name,
        &string(&format_percent(g.error_rate_increase)),
    );
    kv(
        &mut out,
        gate::RSS_SLOPE.name,
        &string(&format_size_rate(g.rss_slope_bytes_per_sec)),
    );
    kv(&mut out, gate::P50_FLOOR.name, &duration(g.p50_floor));
    kv(&mut out, gate::P99_FLOOR.name, &duration(g.p99_floor));
    if !g.operations.is_empty() {
        kv(&mut out, gate::OPERATIONS.name, &strings(&g.operations));
    }

    let p = &cfg.paired;
    section(&mut out, &paired::SECTION);
    kv(&mut out, paired::MODE.name, &string(p.mode.as_str()));
    kv(&mut out, paired::PAIRS.name, &p.pairs.to_string());
    kv(&mut out, paired::BLOCK.name, &duration(p.block));
    kv(&mut out, paired::WARMUP.name, &duration(p.warmup));
    kv(&mut out, paired::AT.name, &string(&format_percent(p.at)));
    if let Some(budget) = p.budget {
        kv(&mut out, paired::BUDGET.name, &duration(budget));
    }
    kv(&mut out, paired::ADAPTIVE.name, &p.adaptive.to_string());

    if !cfg.data.is_empty() {
        section(&mut out, &data::SECTION);
        if let Some(tier) = &cfg.data.tier {
            kv(&mut out, data::TIER.name, &string(tier));
        }
        if !cfg.data.vars.is_empty() {
            kv(
                &mut out,
                data::VARS.name,
                &inline_table(cfg.data.vars.iter().map(|(k, v)| (k.as_str(), string(v)))),
            );
        }
        kv(
            &mut out,
            data::STEPS.name,
            &data_steps(&cfg.data.steps, true),
        );
    }
    if !cfg.teardown.steps.is_empty() {
        section(&mut out, &data::TEARDOWN);
        kv(
            &mut out,
            data::TEARDOWN_STEPS.name,
            &data_steps(&cfg.teardown.steps, false),
        );
    }

    for d in &cfg.dependencies {
        render_dependency(&mut out, d);
    }
    for p in &cfg.probes {
        render_probe(&mut out, p);
    }
    for a in &cfg.audit {
        render_audit(&mut out, a);
    }
    for s in &cfg.stubs {
        render_stub(&mut out, s);
    }
    for f in &cfg.faults {
        render_fault(&mut out, f, &cfg.profile);
    }
    out
}

/// One `[[fault]]`, in the listed profile (a fault names its profiles).
fn render_fault(out: &mut String, f: &FaultConfig, profile: &str) {
    let _ = write!(out, "\n[[fault]]\n");
    kv(out, "name", &string(&f.name));
    kv(out, "profiles", &strings(&[profile.to_owned()]));
    kv(out, "phase", &string(&f.phase));
    // A fault through the ramp has no `at` or `for`.
    if f.phase != "ramp" {
        kv(out, "at", &string(&format_duration(f.at)));
        kv(out, "for", &string(&format_duration(f.duration)));
    }
    match &f.target {
        FaultTarget::Stub { stub, change } => {
            kv(out, "stub", &string(stub));
            if !change.extra.is_zero() {
                kv(
                    out,
                    "latency",
                    &string(&format!("+{}", format_duration(change.extra))),
                );
            } else if change.factor != 1.0 {
                kv(out, "latency", &string(&format_factor(change.factor)));
            }
            if let Some(errors) = change.errors {
                kv(out, "errors", &string(&format_percent(errors)));
            }
        }
        FaultTarget::Replica { replica, action } => {
            kv(out, "replica", &replica.to_string());
            kv(out, "action", &string(action.as_str()));
        }
    }
    if let Some(d) = &f.degraded {
        let mut limits = Vec::new();
        if let Some(p50) = d.p50 {
            limits.push(("p50", duration(p50)));
        }
        if let Some(p99) = d.p99 {
            limits.push(("p99", duration(p99)));
        }
        if let Some(rate) = d.error_rate {
            limits.push(("error-rate", string(&format_percent(rate))));
        }
        kv(out, "degraded", &inline_table(limits));
    }
}

/// One `[[stub]]` with its routes (without `profiles`: the listing is of one profile).
fn render_stub(out: &mut String, s: &StubConfig) {
    let _ = write!(out, "\n[[stub]]\n");
    kv(out, "name", &string(&s.name));
    kv(out, "env", &string(&s.env));
    if s.port != 0 {
        kv(out, "port", &s.port.to_string());
    }
    kv(out, "latency", &latency_value(&s.latency));
    kv(out, "errors", &string(&format_percent(s.errors)));
    kv(out, "error-status", &s.error_status.to_string());
    kv(out, "timeouts", &string(&format_percent(s.timeouts)));
    for r in &s.routes {
        let _ = write!(out, "\n[[stub.route]]\n");
        if let Some(method) = &r.method {
            kv(out, "method", &string(method));
        }
        kv(out, "path", &string(&r.path));
        kv(out, "status", &r.status.to_string());
        kv(out, "body", &string(&r.body));
        kv(out, "content-type", &string(&r.content_type));
        if let Some(latency) = &r.latency {
            kv(out, "latency", &latency_value(latency));
        }
    }
}

/// A stub's latency as it is written: `"20ms"`, `{ mean = "20ms" }`, `{ kind = "lognormal", … }`
/// or a percentile table (`"p99.9"` quoted: a bare dot would nest).
fn latency_value(l: &crate::stub::Latency) -> String {
    use crate::stub::Latency;
    let d = |d: &std::time::Duration| string(&format_duration(*d));
    match l {
        Latency::Fixed { delay } => d(delay),
        Latency::Exponential { mean } => inline_table([("mean", d(mean))]),
        Latency::Lognormal { p50, p99 } => inline_table([
            ("kind", string("lognormal")),
            ("p50", d(p50)),
            ("p99", d(p99)),
        ]),
        Latency::Table { points } => {
            let names: Vec<String> = points
                .iter()
                .map(|p| crate::stub::quantile_name(p.quantile))
                .collect();
            inline_table(
                names
                    .iter()
                    .zip(points)
                    .map(|(name, p)| (name.as_str(), d(&p.delay))),
            )
        }
    }
}

/// The `request = {…}` table of an operation or an audit.
fn request_table(r: &RequestTemplate) -> String {
    let mut request = vec![(op::METHOD, string(&r.method)), (op::PATH, string(&r.path))];
    if !r.headers.is_empty() {
        request.push((
            op::HEADERS,
            inline_table(r.headers.iter().map(|(k, v)| (k.as_str(), string(v)))),
        ));
    }
    match &r.body {
        Some(BodyTemplate::Json(j)) => request.push((op::JSON, json(j))),
        Some(BodyTemplate::Raw(s)) => request.push((op::BODY, string(s))),
        None => {}
    }
    inline_table(request)
}

/// The `expect = {…}` line of an operation or an audit, saying when any 2xx passes.
fn expect_line(e: &Expect) -> String {
    let mut expect = Vec::new();
    match e.status.as_slice() {
        [] => {}
        [one] => expect.push((op::STATUS, one.to_string())),
        many => expect.push((
            op::STATUS,
            format!(
                "[{}]",
                many.iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
    if let Some(b) = &e.body_contains {
        expect.push((op::BODY_CONTAINS, string(b)));
    }
    if !e.json_pointer.is_empty() {
        expect.push((
            op::JSON_POINTER,
            format!(
                "[{}]",
                e.json_pointer
                    .iter()
                    .map(|p| string(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if !e.json_equals.is_empty() {
        expect.push((
            op::JSON_EQUALS,
            inline_table(e.json_equals.iter().map(|(p, v)| (p.as_str(), json(v)))),
        ));
    }
    let any_2xx = if e.status.is_empty() {
        "  # status: any 2xx"
    } else {
        ""
    };
    format!("{} = {}{any_2xx}", op::EXPECT, inline_table(expect))
}

/// One `[[audit]]` (without `profiles`: the listing is of one profile, whose audits these are).
fn render_audit(out: &mut String, a: &AuditConfig) {
    let _ = write!(out, "\n[[audit]]\n");
    kv(out, "name", &string(&a.name));
    kv(out, "request", &request_table(&a.request));
    let _ = writeln!(out, "{}", expect_line(&a.expect));
    let checks: Vec<String> = a
        .checks
        .iter()
        .map(|c| {
            let operand = match &c.operand {
                AuditOperand::Number(x) => format_number(*x),
                AuditOperand::Count(count) => string(&count.to_string()),
            };
            inline_table([
                ("pointer", string(&c.pointer)),
                (c.relation.as_str(), operand),
            ])
        })
        .collect();
    if checks.is_empty() {
        kv(out, "check", "[]");
    } else {
        let _ = writeln!(out, "check = [");
        for check in checks {
            let _ = writeln!(out, "  {check},");
        }
        let _ = writeln!(out, "]");
    }
}

/// One `[[probe]]`.
fn render_probe(out: &mut String, p: &ProbeConfig) {
    let _ = write!(out, "\n[[probe]]\n");
    kv(out, "name", &string(&p.name));
    kv(out, "kind", &string(p.kind.name()));
    if let Some(dependency) = &p.dependency {
        kv(out, "dependency", &string(dependency));
    }
    if let Some(path) = &p.path {
        kv(out, "path", &string(path));
    }
    if let Some(url) = &p.url {
        kv(out, "url", &string(url));
    }
    if !p.series.is_empty() {
        kv(out, "series", &strings(&p.series));
    }
    kv(
        out,
        "limits",
        &inline_table(
            p.limits
                .iter()
                .map(|(k, v)| (k.as_str(), format_number(*v))),
        ),
    );
}

/// One `[[dependency]]`: what it runs, then only the keys that differ from their defaults or that
/// it always has.
fn render_dependency(out: &mut String, d: &DependencyConfig) {
    use super::elements::dependency as dep;
    let _ = write!(out, "\n[[{}]]\n", dep::DEPENDENCY);
    kv(out, dep::NAME.name, &string(&d.name));
    if let Some(kind) = d.kind {
        kv(out, dep::KIND.name, &string(kind.name()));
    }
    let pull = |out: &mut String, p: PullPolicy| {
        if p == PullPolicy::Missing {
            kv(out, dep::PULL.name, &string("missing"));
        }
    };
    match &d.source {
        DependencySource::Preset {
            preset,
            image,
            pull: p,
        } => {
            kv(out, dep::PRESET.name, &string(preset.name()));
            if let Some(image) = image {
                kv(out, dep::IMAGE.name, &string(image));
            }
            pull(out, *p);
        }
        DependencySource::Image { reference, pull: p } => {
            kv(out, dep::IMAGE.name, &string(reference));
            pull(out, *p);
        }
        DependencySource::Dockerfile { path } => {
            kv(
                out,
                dep::DOCKERFILE.name,
                &string(&path.display().to_string()),
            );
        }
        DependencySource::Command { command, args } => {
            kv(out, dep::COMMAND.name, &string(command));
            kv(out, dep::ARGS.name, &strings(args));
        }
        DependencySource::Url { url } => {
            kv(out, dep::URL.name, &string(url));
            // Nothing else is used by a `url` dependency.
            return;
        }
    }
    if let Some(port) = d.port {
        kv(out, dep::PORT.name, &port.to_string());
    }
    let check = match &d.ready.check {
        ReadyCheck::Tcp => (dep::READY_TCP.name, "true".to_owned()),
        ReadyCheck::Http(path) => (dep::READY_HTTP.name, string(path)),
        ReadyCheck::Command(argv) => (dep::READY_COMMAND.name, strings(argv)),
    };
    kv(
        out,
        dep::READY.name,
        &inline_table([
            check,
            (dep::READY_TIMEOUT.name, duration(d.ready.timeout)),
            (dep::READY_INTERVAL.name, duration(d.ready.interval)),
        ]),
    );
    if let Some(cpus) = d.cpus {
        kv(out, dep::CPUS.name, &float(cpus));
    }
    if let Some(bytes) = d.memory_bytes {
        kv(out, dep::MEMORY.name, &string(&format_size(bytes)));
    }
    kv(
        out,
        dep::ENV.name,
        &inline_table(d.env.iter().map(|(k, v)| (k.as_str(), string(v)))),
    );
    kv(out, dep::DEPENDS_ON.name, &strings(&d.depends_on));
}

/// The steps of `[data]` (with `after`) or `[teardown]`, one inline table per line. SQL files are
/// listed where they were found, so the listing reads back from any directory.
fn data_steps(steps: &[DataStep], with_after: bool) -> String {
    let mut out = "[\n".to_owned();
    for step in steps {
        let mut entries = vec![("name", string(&step.name))];
        match &step.action {
            DataAction::Sql { dependency, files } => {
                let paths: Vec<String> =
                    files.iter().map(|f| f.path.display().to_string()).collect();
                entries.push(("sql", strings(&paths)));
                entries.push(("dependency", string(dependency)));
            }
            DataAction::Command { command, args, env } => {
                entries.push(("command", string(command)));
                entries.push(("args", strings(args)));
                entries.push((
                    "env",
                    inline_table(env.iter().map(|(k, v)| (k.as_str(), string(v)))),
                ));
            }
        }
        if with_after {
            entries.push(("after", string(step.after.name())));
        }
        entries.push(("timeout", duration(step.timeout)));
        let _ = writeln!(out, "  {},", inline_table(entries));
    }
    out.push(']');
    out
}

/// A TOML array of basic strings.
fn strings(items: &[String]) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|a| string(a))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The header of `section`'s table, after a blank line.
fn section(out: &mut String, section: &Section) {
    let _ = write!(out, "\n[{}]\n", section.name);
}

fn kv(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "{} = {value}", key_name(key));
}

/// A TOML basic string.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn key_name(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        k.to_owned()
    } else {
        string(k)
    }
}

fn inline_table<'k>(entries: impl IntoIterator<Item = (&'k str, String)>) -> String {
    let parts: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{} = {v}", key_name(k)))
        .collect();
    if parts.is_empty() {
        "{}".to_owned()
    } else {
        format!("{{ {} }}", parts.join(", "))
    }
}

/// `{ attempts = 3, on = ["connect", "5xx"], backoff = "50ms" }`.
fn retry_table(policy: &RetryPolicy) -> String {
    let on: Vec<String> = [
        (policy.on.connect, "connect"),
        (policy.on.status_5xx, "5xx"),
        (policy.on.timeout, "timeout"),
    ]
    .into_iter()
    .filter(|(set, _)| *set)
    .map(|(_, word)| string(word))
    .collect();
    inline_table([
        (retry::ATTEMPTS, policy.attempts.to_string()),
        (retry::ON, format!("[{}]", on.join(", "))),
        (retry::BACKOFF, duration(policy.backoff)),
    ])
}

/// `{ attempts = 2, on = ["connect", "reset"], backoff = "0ms", eject = "1s" }`, or `false`.
fn failover_table(policy: &FailoverPolicy) -> String {
    if *policy == FailoverPolicy::OFF {
        return "false".to_owned();
    }
    let on: Vec<String> = [
        (policy.on.connect, "connect"),
        (policy.on.reset, "reset"),
        (policy.on.timeout, "timeout"),
        (policy.on.status_5xx, "5xx"),
    ]
    .into_iter()
    .filter(|(set, _)| *set)
    .map(|(_, word)| string(word))
    .collect();
    inline_table([
        (retry::ATTEMPTS, policy.attempts.to_string()),
        (retry::ON, format!("[{}]", on.join(", "))),
        (retry::BACKOFF, duration(policy.backoff)),
        (super::elements::failover::EJECT, duration(policy.eject)),
    ])
}

fn duration(d: std::time::Duration) -> String {
    string(&format_duration(d))
}

/// A TOML float: always with a decimal point, so `cpus = 1.0` reads as the float it is.
fn float(x: f64) -> String {
    let s = format_number(x);
    if s.contains('.') { s } else { format!("{s}.0") }
}

fn think(t: &ThinkTime) -> String {
    match t {
        ThinkTime::Exponential(mean) => duration(*mean),
        ThinkTime::Fixed(d) => inline_table([(op::FIXED, duration(*d))]),
        ThinkTime::Uniform(low, high) => inline_table([(
            op::UNIFORM,
            format!("[{}, {}]", duration(*low), duration(*high)),
        )]),
    }
}

/// A JSON value written as a TOML inline value.
fn json(v: &serde_json::Value) -> String {
    use serde_json::Value as J;
    match v {
        J::Null => string("null"),
        J::Bool(b) => b.to_string(),
        J::Number(n) => n.to_string(),
        J::String(s) => string(s),
        J::Array(items) => format!(
            "[{}]",
            items.iter().map(json).collect::<Vec<_>>().join(", ")
        ),
        J::Object(map) => inline_table(map.iter().map(|(k, v)| (k.as_str(), json(v)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn diag(line: usize, col: usize, len: usize, help: Option<&str>) -> Diagnostic {
        Diagnostic {
            path: PathBuf::from("x.toml"),
            line,
            col,
            len,
            message: "something is wrong".to_owned(),
            help: help.map(str::to_owned),
        }
    }

    #[test]
    fn one_problem_is_counted_in_the_singular() {
        let sources = Sources::from([(PathBuf::from("x.toml"), "a = 1\n".to_owned())]);
        let out = render_diagnostics(&[diag(1, 5, 1, None)], &sources);
        assert_eq!(
            out,
            "error: something is wrong\n --> x.toml:1:5\n  |\n1 | a = 1\n  |     ^\n\nerror: could not load the configuration: 1 problem"
        );
    }

    #[test]
    fn the_underline_stays_on_its_line_and_help_lines_align() {
        let sources = Sources::from([(
            PathBuf::from("x.toml"),
            "a = { b = 1,\n  c = 2 }\n".to_owned(),
        )]);
        let out = render_diagnostics(&[diag(1, 5, 40, Some("first\nsecond"))], &sources);
        assert!(
            out.contains("1 | a = { b = 1,\n  |     ^^^^^^^^\n"),
            "{out}"
        );
        assert!(out.contains("  = help: first\n          second\n"), "{out}");
    }

    #[test]
    fn a_file_without_source_is_shown_without_a_snippet() {
        let out = render_diagnostics(&[diag(3, 1, 1, None)], &Sources::new());
        assert_eq!(
            out,
            "error: something is wrong\n --> x.toml:3:1\n\nerror: could not load the configuration: 1 problem"
        );
    }
}
