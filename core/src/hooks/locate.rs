//! Where a value sits in a settings file's text, so an error in a hooks block names the
//! line and column. The file is parsed a second time with a seed that walks down the path to
//! the value and fails there; json5 stamps the failure with its position.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step into a JSON document.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

/// The 1-based line and column of the value at `path` in `text`; `None` when the path is not
/// there (then the caller reports the file alone).
pub(super) fn position(text: &str, path: &[Step]) -> Option<(usize, usize)> {
    let mut de = json5::Deserializer::from_str(text);
    match (Seek { path }).deserialize(&mut de) {
        Err(e) => e.position().map(|p| (p.line + 1, p.column + 1)),
        Ok(()) => None,
    }
}

/// Walks `path`; at its end fails, which json5 marks with the position of that value.
struct Seek<'p> {
    path: &'p [Step],
}

/// The failure at the target value.
const FOUND: &str = "found";

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Step::Key(want), rest)) = self.path.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        while let Some(key) = map.next_key::<String>()? {
            if &key == want {
                return map.next_value_seed(Seek { path: rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Step::Index(want), rest)) = self.path.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        for _ in 0..*want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Seek { path: rest }).map(|_| ())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_of_a_nested_value_is_found_past_comments() {
        let text = "{\n  // note\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"timeout\": -1}]}\n    ]\n  }\n}\n";
        let path = [
            Step::Key("hooks".into()),
            Step::Key("Stop".into()),
            Step::Index(0),
            Step::Key("hooks".into()),
            Step::Index(0),
            Step::Key("timeout".into()),
        ];
        assert_eq!(position(text, &path), Some((5, 30)));
        assert_eq!(position(text, &[Step::Key("nope".into())]), None);
    }
}
