//! The shape of a value: addresses, paths, URLs, e-mails, versions, phone numbers, times, money,
//! numbers and names told apart by their form, so an update is only linked to a value of a
//! compatible kind.

use std::sync::LazyLock;

use regex::Regex;

/// The kind of a value, for telling which updates can replace which values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Email,
    Url,
    Ip,
    Path,
    Version,
    Phone,
    Time,
    Money,
    Number,
    Name,
    Text,
}

impl Shape {
    /// Stable name, as used in `attributes.json` (`by_shape`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Shape::Email => "email",
            Shape::Url => "url",
            Shape::Ip => "ip",
            Shape::Path => "path",
            Shape::Version => "version",
            Shape::Phone => "phone",
            Shape::Time => "time",
            Shape::Money => "money",
            Shape::Number => "number",
            Shape::Name => "name",
            Shape::Text => "text",
        }
    }

    /// Shapes that identify a value by its form alone (an IP is an IP whatever it is called).
    pub fn is_exact(&self) -> bool {
        matches!(
            self,
            Shape::Email | Shape::Url | Shape::Ip | Shape::Path | Shape::Version | Shape::Phone | Shape::Time
        )
    }

    /// Whether a value of shape `other` can replace one of this shape.
    pub fn compatible(&self, other: Shape) -> bool {
        let loose = |s: &Shape| matches!(s, Shape::Text | Shape::Name);
        *self == other || (loose(self) && loose(&other)) || (!self.is_exact() && !other.is_exact())
    }
}

struct Shapes {
    email: Regex,
    url: Regex,
    ip: Regex,
    path: Regex,
    version: Regex,
    phone: Regex,
    time: Regex,
    money: Regex,
    number: Regex,
}

static SHAPES: LazyLock<Shapes> = LazyLock::new(|| Shapes {
    email: crate::patterns::regex(r"^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$"),
    url: crate::patterns::regex(r"(?i)^(?:https?|wss?|ftp|s3|gs|git|ssh)://\S+$|^(?i:www\.)\S+$"),
    ip: crate::patterns::regex(
        r"^\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?:/\d{1,2})?$|^\[?[0-9a-fA-F:]*::[0-9a-fA-F:]*\]?$",
    ),
    path: crate::patterns::regex(r"^(?:~|\.{1,2})?/[\w.~@+-]+(?:/[\w.~@+-]*)*$|^[A-Za-z]:\\\S*$"),
    version: crate::patterns::regex(r"(?i)^v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?$|^(?i:v)\d+$"),
    phone: crate::patterns::regex(r"^\+?\(?\d[\d ()./-]{6,}\d$"),
    time: crate::patterns::regex(r"(?i)^(?:at\s+)?\d{1,2}(?::\d{2}\s*(?:am|pm)?|\s*(?:am|pm))(?:\s+[a-z]{2,4})?$"),
    money: crate::patterns::regex(
        r"^(?:[$€£¥]\s?\d[\d,.]*\w*(?:/\w+)?|\d[\d,.]*\s?(?:usd|eur|gbp|dollars|euros|pounds)\b.*)$",
    ),
    number: crate::patterns::regex(r"^\d[\d,.]*$"),
});

/// Classifies a value by its form.
pub fn shape(value: &str) -> Shape {
    let v = value.trim().trim_end_matches(['.', ',', ';', '!', '?']);
    let s = &*SHAPES;
    let checks: [(&Regex, Shape); 9] = [
        (&s.email, Shape::Email),
        (&s.url, Shape::Url),
        (&s.ip, Shape::Ip),
        (&s.path, Shape::Path),
        (&s.version, Shape::Version),
        (&s.phone, Shape::Phone),
        (&s.time, Shape::Time),
        (&s.money, Shape::Money),
        (&s.number, Shape::Number),
    ];
    if let Some((_, sh)) = checks.iter().find(|(re, _)| re.is_match(v)) {
        return *sh;
    }
    if v.chars().next().is_some_and(char::is_uppercase) {
        Shape::Name
    } else {
        Shape::Text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(shape("10.2.3.4"), Shape::Ip);
        assert_eq!(shape("10.2.3.4:6379"), Shape::Ip);
        assert_eq!(shape("/var/cache/bazel"), Shape::Path);
        assert_eq!(shape("~/builds"), Shape::Path);
        assert_eq!(shape("https://hooks.example.com/v2?x=1"), Shape::Url);
        assert_eq!(shape("dana@example.org"), Shape::Email);
        assert_eq!(shape("v3.2.1"), Shape::Version);
        assert_eq!(shape("20.11"), Shape::Version);
        assert_eq!(shape("+44 20 7946 0958"), Shape::Phone);
        assert_eq!(shape("9:30"), Shape::Time);
        assert_eq!(shape("$49/month"), Shape::Money);
        assert_eq!(shape("Acme Robotics"), Shape::Name);
        assert_eq!(shape("every two weeks"), Shape::Text);
        assert!(Shape::Ip.compatible(Shape::Ip));
        assert!(!Shape::Ip.compatible(Shape::Name));
        assert!(Shape::Name.compatible(Shape::Text));
        assert!(Shape::Money.compatible(Shape::Number));
    }
}
