//! A bucket of an S3-compatible store: each batch one object of gzipped JSON Lines, named
//! by the first and last chunk it holds, so the names say what the bucket has.

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::{ObjectStore, WriteMultipart};
use spider_settings::{S3Bucket, StoreUri};

use super::{Batching, Chunk, Table, Trouble};
use crate::error::Error;

/// Parts of an upload: S3's smallest but the last is 5 MiB.
const PART: usize = 8 * 1024 * 1024;

pub(super) struct Bucket {
    store: AmazonS3,
    /// The objects' directory: the URI's prefix.
    prefix: Path,
    batch: Batching,
}

impl Bucket {
    /// The bucket `bucket` names; credentials, region and endpoint from the URI, else the
    /// usual environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
    /// `AWS_ENDPOINT_URL`).
    pub(super) fn new(bucket: &S3Bucket, uri: &StoreUri) -> Result<Bucket, Error> {
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
        let store = builder.build().map_err(|e| Error::Config(format!("output {uri}: {e}")))?;
        Ok(Bucket {
            store,
            prefix: Path::from(bucket.prefix.as_str()),
            batch: Batching {
                items: bucket.items,
                bytes: bucket.bytes,
                wait: Duration::from_secs(bucket.seconds),
            },
        })
    }
}

/// `CRAWL-FIRST-LAST.jsonl.gz`: the chunks an object holds, numbers padded so that the
/// bucket lists them in order.
fn name(crawl: &str, first: u64, last: u64) -> String {
    format!("{crawl}-{first:012}-{last:012}.jsonl.gz")
}

/// The last chunk an object of `crawl` holds, from its name.
fn last_in(crawl: &str, file: &str) -> Option<u64> {
    let numbers = file.strip_prefix(crawl)?.strip_prefix('-')?.strip_suffix(".jsonl.gz")?;
    let (_, last) = numbers.split_once('-')?;
    last.parse().ok()
}

#[async_trait::async_trait]
impl Table for Bucket {
    async fn committed(&mut self, crawl: &str) -> Result<u64, Trouble> {
        let listed = self.store.list_with_delimiter(Some(&self.prefix)).await.map_err(trouble)?;
        Ok(listed
            .objects
            .iter()
            .filter_map(|object| object.location.filename().and_then(|f| last_in(crawl, f)))
            .max()
            .unwrap_or(0))
    }

    async fn write(&mut self, crawl: &str, chunks: &[Arc<Chunk>]) -> Result<(), Trouble> {
        let (Some(first), Some(last)) = (chunks.first(), chunks.last()) else { return Ok(()) };
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        for chunk in chunks {
            gzip.write_all(&chunk.items).map_err(|e| Trouble::Down(e.to_string()))?;
        }
        let body = gzip.finish().map_err(|e| Trouble::Down(e.to_string()))?;
        let path = self.prefix.child(name(crawl, first.seq, last.seq));
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

    #[test]
    fn an_object_is_named_by_its_chunks_and_read_back_only_for_its_crawl() {
        let file = name("00ab", 7, 12);
        assert_eq!(file, "00ab-000000000007-000000000012.jsonl.gz");
        assert_eq!(last_in("00ab", &file), Some(12));
        assert_eq!(last_in("00ac", &file), None);
        assert_eq!(last_in("00ab", "00ab-1-2.json"), None);
    }
}
