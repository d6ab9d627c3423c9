//! Whether a crawl's pages are rendered in a browser before they are read.

/// Where pages go through a browser: never, only where the answer as sent lacks what the
/// spider reads (`Auto`), or every page (`Always`).
///
/// # Examples
///
/// ```
/// use spider_settings::Render;
///
/// assert_eq!(Render::parse("auto"), Ok(Render::Auto));
/// assert!(Render::parse("allways").unwrap_err().contains("did you mean \"always\""));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Render {
    /// The answer as the server sent it.
    #[default]
    Never,
    /// The answer as sent, and the page rendered when it lacks the item's required fields
    /// or the rule's links; learnt per rule.
    Auto,
    /// Every page rendered.
    Always,
}

impl Render {
    /// Every value, as written.
    pub const NAMES: [&'static str; 3] = ["never", "auto", "always"];

    /// The value `text` names.
    ///
    /// # Errors
    ///
    /// A message naming the values there are.
    pub fn parse(text: &str) -> Result<Render, String> {
        match text.trim() {
            "never" => Ok(Render::Never),
            "auto" => Ok(Render::Auto),
            "always" => Ok(Render::Always),
            other => {
                let hint = crate::keys::did_you_mean(other, &Render::NAMES);
                Err(format!(
                    "`{other}` is no render mode{hint}; write \"never\", \"auto\" (in a browser when the \
                        page as sent lacks the item or the links) or \"always\""
                ))
            }
        }
    }

    /// The value as written.
    pub fn name(self) -> &'static str {
        match self {
            Render::Never => "never",
            Render::Auto => "auto",
            Render::Always => "always",
        }
    }
}
