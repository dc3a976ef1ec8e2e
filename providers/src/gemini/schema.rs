//! Tool JSON schemas cut down to the OpenAPI subset `functionDeclarations` accepts: Gemini
//! rejects a whole request over one keyword it does not know (`additionalProperties`,
//! `$schema`, `$ref`...), so everything outside the subset is dropped.

use serde_json::{Map, Value};

/// The schema keywords Gemini accepts; every other key is dropped.
const KEPT: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "minItems",
    "maxItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "anyOf",
    "propertyOrdering",
    "default",
];

/// `schema` in the subset: unknown keywords dropped, `type: [T, "null"]` as `type: T,
/// nullable: true`, enum values as strings, `const` as a one-value enum.
pub(super) fn gemini_schema(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = value {
                    let props = props
                        .iter()
                        .map(|(name, s)| (name.clone(), gemini_schema(s)))
                        .collect();
                    out.insert(key.clone(), Value::Object(props));
                }
            }
            "items" => {
                out.insert(key.clone(), gemini_schema(value));
            }
            "anyOf" => {
                if let Value::Array(options) = value {
                    let options = options.iter().map(gemini_schema).collect();
                    out.insert(key.clone(), Value::Array(options));
                }
            }
            "type" => match value {
                Value::Array(types) => {
                    let mut named = types
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|t| *t != "null");
                    if let Some(first) = named.next() {
                        out.insert(key.clone(), Value::String(first.to_owned()));
                    }
                    if types.iter().any(|t| t == "null") {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            },
            "enum" => {
                if let Value::Array(values) = value {
                    out.insert(
                        key.clone(),
                        Value::Array(values.iter().map(as_string).collect()),
                    );
                    out.insert("type".into(), Value::String("string".into()));
                }
            }
            "const" => {
                out.insert("enum".into(), Value::Array(vec![as_string(value)]));
                out.insert("type".into(), Value::String("string".into()));
            }
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    // An enum is a string enum to Gemini whatever the source said.
    if out.contains_key("enum") {
        out.insert("type".into(), Value::String("string".into()));
    }
    Value::Object(out)
}

fn as_string(value: &Value) -> Value {
    match value {
        Value::String(_) => value.clone(),
        other => Value::String(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn keywords_outside_gemini_s_subset_are_dropped_at_every_depth() {
        let dropped = [
            "$schema",
            "$ref",
            "$defs",
            "$id",
            "$comment",
            "definitions",
            "additionalProperties",
            "patternProperties",
            "unevaluatedProperties",
            "oneOf",
            "allOf",
            "not",
            "examples",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
            "uniqueItems",
            "readOnly",
            "writeOnly",
            "deprecated",
        ];
        let mut inner = json!({"type": "string", "description": "a path"});
        let mut outer = json!({
            "type": "object",
            "properties": {"path": inner.clone()},
            "required": ["path"],
        });
        for key in dropped {
            inner[key] = json!(1);
            outer[key] = json!(1);
        }
        outer["properties"]["path"] = inner;
        assert_eq!(
            gemini_schema(&outer),
            json!({
                "type": "object",
                "properties": {"path": {"type": "string", "description": "a path"}},
                "required": ["path"],
            })
        );
    }

    #[test]
    fn enums_become_string_enums_and_nullable_types_collapse() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer", "enum": [1, 2]},
            "mode": {"const": "fast"},
            "maybe": {"type": ["string", "null"]},
            "list": {"type": "array", "items": {"type": "string", "additionalProperties": false}},
        }});
        assert_eq!(
            gemini_schema(&schema)["properties"],
            json!({
                "n": {"type": "string", "enum": ["1", "2"]},
                "mode": {"enum": ["fast"], "type": "string"},
                "maybe": {"type": "string", "nullable": true},
                "list": {"type": "array", "items": {"type": "string"}},
            })
        );
    }
}
