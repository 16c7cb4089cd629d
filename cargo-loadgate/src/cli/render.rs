//! Rendering for people: errors to stderr (message, causes, hint). Tables are
//! [`crate::report::Table`].

use std::error::Error;

/// Renders an error the way every command prints it: `error: <message>`, then each cause on its own
/// `caused by:` line, with any `hint:` lines of the message kept last.
pub fn render_error(err: &(dyn Error + 'static)) -> String {
    let message = err.to_string();
    let (head, hints) = split_hints(&message);
    let mut out = String::new();
    if head.starts_with("error") {
        out.push_str(head);
    } else {
        out.push_str("error: ");
        out.push_str(head);
    }
    out.push('\n');
    let mut source = err.source();
    let mut hints: Vec<String> = hints.into_iter().map(str::to_owned).collect();
    while let Some(cause) = source {
        let text = cause.to_string();
        let (cause_head, cause_hints) = split_hints(&text);
        // Some errors repeat their source in their own message; print each cause once.
        if !out.contains(cause_head) {
            out.push_str("  caused by: ");
            out.push_str(&cause_head.replace('\n', "\n    "));
            out.push('\n');
        }
        hints.extend(cause_hints.into_iter().map(str::to_owned));
        source = cause.source();
    }
    for hint in hints {
        out.push_str(&hint);
        out.push('\n');
    }
    out
}

/// Renders a failed command's error, then the failing stage's hint (bare text) on its own `hint:`
/// line, once.
pub fn render_failure(err: &(dyn Error + 'static), hint: Option<&str>) -> String {
    let mut out = render_error(err);
    if let Some(hint) = hint {
        out.push_str("hint: ");
        out.push_str(hint);
        out.push('\n');
    }
    out
}

/// Splits trailing `hint:` lines (and what follows them) off a message.
fn split_hints(message: &str) -> (&str, Vec<&str>) {
    match message.find("\nhint:") {
        Some(at) => (message[..at].trim_end(), vec![message[at + 1..].trim_end()]),
        None => (message.trim_end(), Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to boot the target\nhint: try --target process")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn errors_render_message_causes_then_hint() {
        let err = Outer(std::io::Error::other("connection refused"));
        insta::assert_snapshot!(render_error(&err), @r"
        error: failed to boot the target
          caused by: connection refused
        hint: try --target process
        ");
    }

    /// Baseline hints used to carry their own label, and the command line added another
    /// ("hint: hint: …"): every baseline error renders with at most one.
    #[test]
    fn baseline_errors_render_one_hint_label() {
        for (name, err) in crate::baseline::error_examples() {
            let hint = err.hint();
            let out = render_failure(&err, hint.as_deref());
            let labels = out.matches("hint:").count();
            assert_eq!(labels, usize::from(hint.is_some()), "{name}:\n{out}");
            assert!(!out.contains("hint: hint"), "{name}:\n{out}");
        }
    }

    #[test]
    fn a_baseline_hint_renders_on_its_own_line() {
        let (_, err) = crate::baseline::error_examples()
            .into_iter()
            .find(|(n, _)| *n == "no_base_ref")
            .expect("example");
        insta::assert_snapshot!(render_failure(&err, err.hint().as_deref()), @r"
        error: no base branch to find the baseline through: neither `origin/HEAD` nor `main` exists in /work/repo
        hint: name the base branch with --base-ref (e.g. origin/main)
        ");
    }
}
