//! A line diff (longest common subsequence) for showing how two renderings of a bundle differ.

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Same(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// Most lines compared; past this the rest is shown as removed and added (bundles are small).
const MAX_LINES: usize = 2000;

/// The lines of `old` and `new` in order, each kept, removed or added.
pub fn lines<'a>(old: &'a str, new: &'a str) -> Vec<Line<'a>> {
    let a: Vec<&str> = old.lines().take(MAX_LINES).collect();
    let b: Vec<&str> = new.lines().take(MAX_LINES).collect();
    // lcs[i][j] = length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        if a[i] == b[j] {
            out.push(Line::Same(a[i]));
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            out.push(Line::Removed(a[i]));
            i += 1;
        } else {
            out.push(Line::Added(b[j]));
            j += 1;
        }
    }
    out.extend(a[i..].iter().map(|l| Line::Removed(l)));
    out.extend(b[j..].iter().map(|l| Line::Added(l)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_is_removed_then_added_between_kept_ones() {
        let d = lines("## Task\nx\n- I work at Initech\nend", "## Task\nx\n- I work at Globex\nend");
        assert_eq!(
            d,
            vec![
                Line::Same("## Task"),
                Line::Same("x"),
                Line::Removed("- I work at Initech"),
                Line::Added("- I work at Globex"),
                Line::Same("end"),
            ]
        );
        assert!(lines("a\nb", "a\nb").iter().all(|l| matches!(l, Line::Same(_))));
        assert_eq!(lines("", "a"), vec![Line::Added("a")]);
    }
}
