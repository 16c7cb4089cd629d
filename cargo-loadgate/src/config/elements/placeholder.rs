//! The `{{…}}` placeholders of the config's templates, found and filled in one way for all three
//! kinds: a request's session variables (`operation`), a dependency's fields (`dependency`) and a
//! data step's values (`data`). Each kind reads what is inside the braces its own way.

/// What is inside each `{{…}}` of `s`, as written (untrimmed), in order; an error names `s` when a
/// `{{` has no closing `}}`.
pub(crate) fn placeholders(s: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| format!("`{{{{` without a closing `}}}}` in {s:?}"))?;
        out.push(&after[..close]);
        rest = &after[close + 2..];
    }
    Ok(out)
}

/// `s` with every `{{…}}` replaced by `value` of what is inside it (trimmed); `None` from it, and
/// a `{{` without a closing `}}`, leave the text as written (validation has refused both before
/// anything runs).
pub(crate) fn render_placeholders(s: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            rest = &rest[open..];
            break;
        };
        match value(after[..close].trim()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[open..open + 2 + close + 2]),
        }
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_as_written_and_an_unclosed_one_is_named() {
        assert_eq!(placeholders("a {{ x }} b {{y.z}}"), Ok(vec![" x ", "y.z"]));
        assert_eq!(placeholders("none"), Ok(vec![]));
        assert!(
            placeholders("{{x")
                .unwrap_err()
                .contains("without a closing")
        );
    }

    #[test]
    fn rendering_fills_what_it_knows_and_leaves_the_rest() {
        let filled = render_placeholders("{{ a }}-{{b}}-{{c", |inner| {
            (inner == "a").then(|| "1".to_owned())
        });
        assert_eq!(filled, "1-{{b}}-{{c");
    }
}
