// The rate-limit bench's work, written as a Crawlee user would (CheerioCrawler, its
// defaults but the concurrency): from the index of each host name, follow every link to
// a page under /p/ and write its title.
//
//   node pages.mjs --starts URL,URL,... --output OUT.jsonl --concurrency C
//
// Names under `.localhost` are the loopback (RFC 6761), as Spiderling and browsers
// resolve them; the system's resolver here does not, so the requests look them up here.
import { appendFileSync } from 'node:fs';
import dns from 'node:dns';
import { CheerioCrawler, log } from 'crawlee';

const arg = (name) => {
    const at = process.argv.indexOf(name);
    if (at < 0 || at + 1 >= process.argv.length) throw new Error(`${name} is needed`);
    return process.argv[at + 1];
};
const [starts, output, concurrency] = [arg('--starts').split(','), arg('--output'), Number(arg('--concurrency'))];
log.setLevel(log.LEVELS.WARNING);

function lookup(hostname, options, callback) {
    if (typeof options === 'function') [options, callback] = [{}, options];
    if (hostname !== 'localhost' && !hostname.endsWith('.localhost')) return dns.lookup(hostname, options, callback);
    if (options.all) return callback(null, [{ address: '127.0.0.1', family: 4 }]);
    return callback(null, '127.0.0.1', 4);
}

const crawler = new CheerioCrawler({
    maxConcurrency: concurrency,
    preNavigationHooks: [
        (_context, gotOptions) => {
            gotOptions.dnsLookup = lookup;
        },
    ],
    async requestHandler({ request, $, enqueueLinks }) {
        if (/^\/p\/\d+\.html$/.test(new URL(request.loadedUrl ?? request.url).pathname)) {
            appendFileSync(output, JSON.stringify({ url: request.url, title: $('h1').first().text() }) + '\n');
            return;
        }
        await enqueueLinks({ globs: ['http{,s}://*/p/*.html'] });
    },
});
await crawler.run(starts);
