//! `${VAR}` and `$VAR` references in server settings, so tokens stay in the environment rather
//! than in settings files. Both spellings are taken so blocks pasted from Claude Code
//! (`${VAR}`) and Gemini CLI / Qwen Code (`$VAR`) work as they are.

/// Replaces every `${NAME}`, `${NAME:-default}` and `$NAME` in `text` with the variable's
/// value; `$$` is a literal `$`, and a `$` not followed by a name stays as it is. A variable
/// that is unset (or empty) without a default is an error naming it; the value itself never
/// appears in the error.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('$') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        if let Some(escaped) = after.strip_prefix('$') {
            out.push('$');
            rest = escaped;
        } else if let Some(braced) = after.strip_prefix('{') {
            let Some(end) = braced.find('}') else {
                return Err(format!("`${{` without a closing `}}` in {text:?}"));
            };
            let inner = &braced[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            if !is_name(name) {
                return Err(format!("`${{{inner}}}` is not a variable reference"));
            }
            out.push_str(&value(name, default, env, &format!("${{{name}}}"))?);
            rest = &braced[end + 1..];
        } else {
            let len = name_len(after);
            if len == 0 {
                out.push('$');
            } else {
                let name = &after[..len];
                out.push_str(&value(name, None, env, &format!("${name}"))?);
            }
            rest = &after[len..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The names of the variables `text` references (also those with a default), in order.
pub fn references(text: &str) -> Vec<String> {
    let names = std::cell::RefCell::new(Vec::new());
    let record = |name: &str| {
        names.borrow_mut().push(name.to_owned());
        Some("x".to_owned())
    };
    // Malformed text references nothing that could be expanded either.
    let _ = expand(text, &record);
    names.into_inner()
}

/// The value of `name`, else `default`, else an error naming the reference as written.
fn value(
    name: &str,
    default: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    written: &str,
) -> Result<String, String> {
    match env(name).filter(|v| !v.is_empty()) {
        Some(value) => Ok(value),
        None => default
            .map(str::to_owned)
            .ok_or_else(|| format!("it uses {written}, which is not set")),
    }
}

/// Whether `name` is a variable name: a letter or `_`, then letters, digits or `_`.
fn is_name(name: &str) -> bool {
    !name.is_empty() && name_len(name) == name.len()
}

/// The length of the variable name `text` starts with (0 when it starts with none).
fn name_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return 0,
    }
    chars
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_'))
        .map_or(text.len(), |(i, _)| i)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_owned())
    }

    #[test]
    fn references_are_replaced_and_plain_text_is_kept() {
        assert_eq!(
            expand("Bearer ${TOKEN} ${MISSING:-none} ${MISSING:-}", &env),
            Ok("Bearer s3cret none ".to_owned())
        );
    }

    #[test]
    fn geminis_bare_references_are_replaced_and_a_double_dollar_is_a_dollar() {
        assert_eq!(
            expand("$TOKEN/$TOKEN_x:$TOKEN.", &env),
            Err("it uses $TOKEN_x, which is not set".to_owned())
        );
        assert_eq!(
            expand("$TOKEN-x pa$$word costs $5 at end$", &env),
            Ok("s3cret-x pa$word costs $5 at end$".to_owned())
        );
    }

    #[test]
    fn references_lists_every_variable_named() {
        assert_eq!(
            references("${A} $B_1 ${C:-d} $$E $"),
            vec!["A".to_owned(), "B_1".to_owned(), "C".to_owned()]
        );
    }

    #[test]
    fn an_unset_variable_is_named_in_the_error() {
        assert_eq!(
            expand("${NOPE}", &env),
            Err("it uses ${NOPE}, which is not set".to_owned())
        );
        assert!(expand("${TOKEN", &env).is_err());
        assert!(expand("${a b}", &env).is_err());
    }
}
