//! `${VAR}` references in server settings, so tokens stay in the environment rather than in
//! settings files.

/// Replaces every `${NAME}` (or `${NAME:-default}`) in `text` with the variable's value.
/// A variable that is unset (or empty) without a default is an error naming it; the value
/// itself never appears in the error.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`${{` without a closing `}}` in {text:?}"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{inner}}}` is not a variable reference"));
        }
        match env(name).filter(|v| !v.is_empty()) {
            Some(value) => out.push_str(&value),
            None => match default {
                Some(default) => out.push_str(default),
                None => return Err(format!("it uses ${{{name}}}, which is not set")),
            },
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
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
            expand("Bearer ${TOKEN} $HOME ${MISSING:-none}", &env),
            Ok("Bearer s3cret $HOME none".to_owned())
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
