// Post or update one sticky pull-request comment (docs/ci.md), for actions/github-script:
// the comment whose first line equals the body's first line (memrun's hidden marker,
// e.g. <!-- memrun-compare: locomo/bm25 -->) is updated, else a new comment is created.
module.exports = async ({github, context, body}) => {
  const marker = body.split('\n')[0];
  if (!marker.startsWith('<!-- memrun-')) throw new Error(`no memrun marker on the first line: ${marker}`);
  const {owner, repo} = context.repo;
  const issue_number = context.payload.pull_request.number;
  const comments = await github.paginate(github.rest.issues.listComments, {owner, repo, issue_number});
  const old = comments.find((c) => (c.body || '').split('\n')[0] === marker);
  if (old) {
    await github.rest.issues.updateComment({owner, repo, comment_id: old.id, body});
  } else {
    await github.rest.issues.createComment({owner, repo, issue_number, body});
  }
};
