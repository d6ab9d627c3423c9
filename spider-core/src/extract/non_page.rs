//! Links that lead to files rather than pages: archives, media, documents, programs,
//! stylesheets and scripts. A spider's `follow` selector skips them, since fetching a
//! video to look for links in it costs bandwidth and finds none.

use url::Url;

/// Extensions of files that are not pages, lower case, by kind.
#[rustfmt::skip]
const NON_PAGE_EXTENSIONS: &[&str] = &[
    // archives and compressed files
    "7z", "bz2", "gz", "rar", "tar", "tgz", "xz", "zip", "zst",
    // images
    "ai", "avif", "bmp", "eps", "gif", "heic", "ico", "jpeg", "jpg", "png", "psd", "svg", "tif",
    "tiff", "webp",
    // audio
    "aac", "aiff", "flac", "m4a", "mid", "mp3", "ogg", "opus", "wav", "wma",
    // video
    "3gp", "avi", "flv", "m4v", "mkv", "mov", "mp4", "mpeg", "mpg", "swf", "webm", "wmv",
    // documents
    "doc", "docx", "epub", "odp", "ods", "odt", "pdf", "ppt", "pptx", "rtf", "xls", "xlsx",
    // programs and packages
    "apk", "bin", "deb", "dmg", "exe", "iso", "jar", "msi", "rpm", "whl",
    // stylesheets, scripts, source and fonts
    "css", "eot", "js", "map", "mjs", "otf", "py", "rb", "sh", "ttf", "woff", "woff2",
];

/// Whether `url`'s path ends in the extension of a file that is not a page.
pub(crate) fn is_non_page(url: &Url) -> bool {
    let name = url.path().rsplit('/').next().unwrap_or_default();
    match name.rsplit_once('.') {
        Some((stem, extension)) if !stem.is_empty() => {
            NON_PAGE_EXTENSIONS.iter().any(|known| known.eq_ignore_ascii_case(extension))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn non_page(url: &str) -> bool {
        is_non_page(&Url::parse(url).unwrap())
    }

    #[test]
    fn files_are_told_from_pages_by_their_extension() {
        for url in [
            "https://shop.example/downloads/catalogue.zip",
            "https://shop.example/covers/1.JPG?size=large",
            "https://shop.example/src/setup.py",
            "https://shop.example/report.pdf#page=2",
            "https://shop.example/backup.tar.gz",
        ] {
            assert!(non_page(url), "{url}");
        }
        for url in [
            "https://shop.example/",
            "https://shop.example/catalogue/page-2.html",
            "https://shop.example/product/42",
            "https://shop.example/search?q=file.zip",
            "https://shop.example/v1.2/",
            "https://shop.example/.zip",
            "https://shop.example/index.php",
        ] {
            assert!(!non_page(url), "{url}");
        }
    }
}
