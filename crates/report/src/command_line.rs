//! A tcplab command line set so that it never breaks inside a flag: the
//! line is cut into flag groups (`--write-size 1K,64K` is one group) and a
//! page may wrap only between groups.

use crate::escape::escape;

/// Whether a word is a flag (`-q`, `--write-size`), not a value such as
/// `-1` or `-`.
fn is_flag(word: &str) -> bool {
    let rest = word.trim_start_matches('-');
    word.starts_with('-') && !rest.is_empty() && !rest.starts_with(|c: char| c.is_ascii_digit())
}

/// The command's words in groups that must stay on one line: a flag with
/// the value that follows it (`--write-size 1K,64K`; tcplab's flags take
/// at most one word, a list being one comma-separated word), every other
/// word alone (`tcplab`, `bench`, `tcp-stream`).
pub fn flag_groups(line: &str) -> Vec<String> {
    let mut groups: Vec<String> = Vec::new();
    let mut flag_open = false;
    for word in line.split_whitespace() {
        match groups.last_mut() {
            Some(last) if flag_open && !is_flag(word) => {
                last.push(' ');
                last.push_str(word);
                flag_open = false;
            }
            _ => {
                flag_open = is_flag(word);
                groups.push(word.to_string());
            }
        }
    }
    groups
}

/// The command as HTML: a `<code class="cmd">` of one
/// `<span class="arg">` per flag group, joined by plain spaces. The page's
/// style sheet keeps each span on one line (`white-space: nowrap`); the
/// spaces stay ordinary so a copied command still runs in a shell (a
/// non-breaking space would become part of the word).
pub fn command_html(line: &str) -> String {
    let spans: Vec<String> = flag_groups(line)
        .iter()
        .map(|g| format!("<span class=\"arg\">{}</span>", escape(g)))
        .collect();
    format!("<code class=\"cmd\">{}</code>", spans.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_keeps_its_values_and_a_negative_number_is_a_value() {
        let g = flag_groups(
            "tcplab --db x.db bench tcp-stream --write-size 1K,64K -q --duration -1 --to h:1",
        );
        assert_eq!(
            g,
            [
                "tcplab",
                "--db x.db",
                "bench",
                "tcp-stream",
                "--write-size 1K,64K",
                "-q",
                "--duration -1",
                "--to h:1"
            ]
        );
    }

    #[test]
    fn html_puts_each_group_in_one_span_and_escapes_it() {
        let h = command_html("tcplab bench http --path <a&b> --write-size 1K");
        assert_eq!(
            h,
            "<code class=\"cmd\"><span class=\"arg\">tcplab</span> <span class=\"arg\">bench</span> \
             <span class=\"arg\">http</span> <span class=\"arg\">--path &lt;a&amp;b&gt;</span> \
             <span class=\"arg\">--write-size 1K</span></code>"
        );
    }
}
