//! A key of a partial update (a PATCH body): absent, null or a value, three different requests.

use serde::{Deserialize, Deserializer};

use super::rules::{Measured, Text};

/// One key of a partial update: left out (keep the stored value), `null` (reset it to its
/// default) or a new value. Declare the field `#[serde(default)]` so a missing key is `Keep`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Setting<T> {
    /// The key was not sent.
    #[default]
    Keep,
    /// The key was sent as `null`.
    Reset,
    /// The key was sent with a value.
    Set(T),
}

impl<T> Setting<T> {
    /// The new value, if one was sent.
    pub fn value(&self) -> Option<&T> {
        match self {
            Setting::Set(v) => Some(v),
            _ => None,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Setting<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // only a present key reaches this: null resets it
        Ok(Option::<T>::deserialize(d)?.map_or(Setting::Reset, Setting::Set))
    }
}

/// The limits of a setting are those of its value (`Keep` and `Reset` pass every rule).
impl<T: Measured> Measured for Setting<T> {
    fn size(&self) -> Option<usize> {
        self.value().and_then(Measured::size)
    }
}

impl<T: Text> Text for Setting<T> {
    fn has_nul(&self) -> bool {
        self.value().is_some_and(Text::has_nul)
    }
}

impl From<Setting<i64>> for Option<i64> {
    fn from(s: Setting<i64>) -> Self {
        s.value().copied()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    struct Patch {
        #[serde(default)]
        a: Setting<i64>,
        #[serde(default)]
        b: Setting<String>,
        #[serde(default)]
        c: Setting<bool>,
    }

    #[test]
    fn absent_null_and_a_value_differ() {
        let p: Patch = serde_json::from_value(json!({"a": 3, "b": null})).unwrap();
        assert_eq!((p.a, p.b, p.c), (Setting::Set(3), Setting::Reset, Setting::Keep));
        assert_eq!(Option::<i64>::from(p.a), Some(3));
        assert_eq!(Setting::<String>::Set("abc".into()).size(), Some(3));
        assert_eq!(Setting::<String>::Reset.size(), None);
    }
}
