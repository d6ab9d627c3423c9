//! A bucket of an S3-compatible store: each batch one object of JSON Lines, named from the
//! URI's template by the first and last chunk it holds, so the names say what the bucket has.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{ObjectStore, WriteMultipart};
use spider_settings::{S3Bucket, StoreUri};

use super::table::{Batching, Chunk, Table, Trouble};
use crate::error::Error;
use crate::sinks::{compress, Compression};

/// Parts of an upload: S3's smallest but the last is 5 MiB.
const PART: usize = 8 * 1024 * 1024;

pub(super) struct Bucket {
    store: AmazonS3,
    names: Names,
    compression: Option<Compression>,
    batch: Batching,
}

impl Bucket {
    /// The bucket `bucket` names, for the spider `spider`; credentials, region and
    /// endpoint from the URI, else the usual environment (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`). Without a key anywhere,
    /// refused, unless the URI asks for the machine's (`credentials=instance`).
    pub(super) fn new(bucket: &S3Bucket, uri: &StoreUri, spider: &str) -> Result<Bucket, Error> {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&bucket.bucket);
        if let Some(endpoint) = &bucket.endpoint {
            builder = builder.with_endpoint(endpoint).with_allow_http(endpoint.starts_with("http://"));
        }
        if let Some(region) = &bucket.region {
            builder = builder.with_region(region);
        }
        if let Some((key, secret)) = &bucket.credentials {
            builder = builder.with_access_key_id(key).with_secret_access_key(secret);
        }
        if !bucket.instance_credentials && !has_credentials(&builder) {
            return Err(Error::Config(format!(
                "output {uri}: no credentials for the bucket; give them in the URI \
                 (s3://KEY:SECRET@BUCKET/…, which output = \"env:VAR\" can keep in a variable) or in \
                 AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; add ?credentials=instance to take them from \
                     the machine's instance metadata"
            )));
        }
        let store = builder.build().map_err(|e| Error::Config(format!("output {uri}: {e}")))?;
        Ok(Bucket {
            store,
            names: Names {
                prefix: bucket.prefix.clone(),
                object: bucket.object.clone(),
                spider: spider.to_owned(),
            },
            compression: Compression::of(std::path::Path::new(&bucket.object)),
            batch: Batching {
                items: bucket.items,
                bytes: bucket.bytes,
                wait: Duration::from_secs(bucket.seconds),
            },
        })
    }
}

/// Whether the builder found a key, or a role to ask for one (a web identity, a
/// container's), without the instance metadata it falls back on last.
fn has_credentials(builder: &AmazonS3Builder) -> bool {
    let set = |key| builder.get_config_value(&key).is_some();
    let web_identity =
        ["AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"].iter().all(|var| std::env::var_os(var).is_some());
    set(AmazonS3ConfigKey::AccessKeyId)
        || set(AmazonS3ConfigKey::SecretAccessKey)
        || set(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || set(AmazonS3ConfigKey::ContainerCredentialsFullUri)
        || web_identity
}

/// The URI's template of a crawl's objects: a directory and an object's name.
struct Names {
    prefix: String,
    object: String,
    spider: String,
}

impl Names {
    /// `template` with the crawl's names in it: `{batch}` stays.
    fn fill(&self, template: &str, crawl: &str) -> String {
        // The crawl's name begins with its start time (an older state file's has none).
        let time = crawl.split_once('-').map_or(crawl, |(time, _)| time);
        template.replace("{spider}", &self.spider).replace("{time}", time).replace("{crawl}", crawl)
    }

    fn directory(&self, crawl: &str) -> Path {
        Path::from(self.fill(&self.prefix, crawl))
    }

    /// The object holding the chunks `first..=last`, numbers padded so that the bucket
    /// lists them in order.
    fn object(&self, crawl: &str, first: u64, last: u64) -> Path {
        let name = self.fill(&self.object, crawl).replace("{batch}", &format!("{first:012}-{last:012}"));
        self.directory(crawl).child(name)
    }

    /// The last chunk an object of `crawl` holds, from its name.
    fn last_in(&self, crawl: &str, file: &str) -> Option<u64> {
        let name = self.fill(&self.object, crawl);
        let (before, after) = name.split_once("{batch}")?;
        let numbers = file.strip_prefix(before)?.strip_suffix(after)?;
        let (_, last) = numbers.split_once('-')?;
        last.parse().ok()
    }
}

#[async_trait::async_trait]
impl Table for Bucket {
    async fn committed(&mut self, crawl: &str) -> Result<u64, Trouble> {
        let listed =
            self.store.list_with_delimiter(Some(&self.names.directory(crawl))).await.map_err(trouble)?;
        Ok(listed
            .objects
            .iter()
            .filter_map(|object| object.location.filename().and_then(|f| self.names.last_in(crawl, f)))
            .max()
            .unwrap_or(0))
    }

    async fn write(&mut self, crawl: &str, chunks: &[Arc<Chunk>]) -> Result<(), Trouble> {
        let (Some(first), Some(last)) = (chunks.first(), chunks.last()) else { return Ok(()) };
        let body = compress(self.compression, chunks.iter().map(|chunk| chunk.items.as_slice()))
            .map_err(|e| Trouble::Down(e.to_string()))?;
        let path = self.names.object(crawl, first.seq, last.seq);
        // A multipart upload becomes visible only when completed: never a partial object.
        let upload = self.store.put_multipart(&path).await.map_err(trouble)?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
        writer.write(&body);
        writer.finish().await.map_err(trouble).map(|_| ())
    }

    fn batching(&self) -> Batching {
        self.batch
    }
}

/// A bucket that is not there, or credentials it refuses, will not mend by waiting.
fn trouble(error: object_store::Error) -> Trouble {
    match error {
        object_store::Error::NotFound { .. } => Trouble::Refused(format!("the bucket is not there: {error}")),
        object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => {
            Trouble::Refused(error.to_string())
        }
        other => Trouble::Down(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(prefix: &str, object: &str) -> Names {
        Names { prefix: prefix.to_owned(), object: object.to_owned(), spider: "books".to_owned() }
    }

    #[test]
    fn an_object_is_named_by_its_chunks_and_read_back_only_for_its_crawl() {
        let plain = names("crawls", "{crawl}-{batch}.jsonl.gz");
        let crawl = "20261203T065646Z-00ab";
        let path = plain.object(crawl, 7, 12);
        assert_eq!(path.as_ref(), "crawls/20261203T065646Z-00ab-000000000007-000000000012.jsonl.gz");
        let file = path.filename().unwrap();
        assert_eq!(plain.last_in(crawl, file), Some(12));
        assert_eq!(plain.last_in("20261203T065646Z-00ac", file), None);
        assert_eq!(plain.last_in(crawl, "20261203T065646Z-00ab-1-2.json"), None);
    }

    #[test]
    fn a_template_puts_the_spider_and_the_crawls_start_in_the_path() {
        let template = names("items/{spider}", "{time}-{batch}.jsonl.zst");
        let crawl = "20261203T065646Z-00ab";
        let path = template.object(crawl, 1, 3);
        assert_eq!(path.as_ref(), "items/books/20261203T065646Z-000000000001-000000000003.jsonl.zst");
        assert_eq!(template.directory(crawl).as_ref(), "items/books");
        assert_eq!(template.last_in(crawl, path.filename().unwrap()), Some(3));
        assert_eq!(template.last_in("20261204T000000Z-00ab", path.filename().unwrap()), None);
    }
}
