// text_afinn.js PACKAGE NAME DATA: the AFINN lexicon's accuracy (percent, two decimals) on
// the labelled sentences of DATA/NAME.json (NAME amazon, yelp or imdb; all: the three
// merged), scored by the `sentiment` npm package's own code in the folder PACKAGE (5.0.2:
// the sum of the AFINN scores of a sentence's words, a word's score negated after a word
// of its negator list), classed as the package's test/benchmark/validate.js does:
// positive when the comparative score (the sum over the number of tokens) is >= 0, so a
// sentence with no AFINN word counts as positive. The files' trailing {"text": "",
// "class": null} is dropped (validate.js counts it as a right answer, which is why its
// figures run a few hundredths above these). experiments/text_sentiment.sh runs it.
'use strict';
const fs = require('fs');
const path = require('path');
const [pkg, name, data] = process.argv.slice(2);
if (!pkg || !name || !data) {
    process.stderr.write('usage: node text_afinn.js PACKAGE NAME DATA\n');
    process.exit(2);
}
const Sentiment = require(path.resolve(pkg, 'lib', 'index.js'));
const sentiment = new Sentiment();
const names = name === 'all' ? ['amazon', 'yelp', 'imdb'] : [name];
let right = 0, n = 0;
for (const f of names) {
    const set = JSON.parse(fs.readFileSync(path.join(data, f + '.json'), 'utf8'));
    for (const s of set) {
        if (s.class !== 0 && s.class !== 1) continue;
        const positive = sentiment.analyze(s.text).comparative >= 0;
        right += positive === (s.class === 1) ? 1 : 0;
        n++;
    }
}
if (n === 0) {
    process.stderr.write('text_afinn.js: no labelled sentences in ' + data + '\n');
    process.exit(1);
}
process.stdout.write((100 * right / n).toFixed(2) + '\n');
