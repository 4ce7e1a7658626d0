/**
 * A script for Swagger UI's page (SwaggerModule.setup's `customJsStr`, src/app.factory.ts): the Authorize dialog
 * opens at its top with the cursor in the first scheme's value field, the `token` scheme (`Authorization: Token
 * <personal access token>`, its description says to type the word `Token` first).
 *
 * Why: Swagger UI 5 gives every scheme's value field `autoFocus`; React focuses each one as the dialog mounts, so the
 * last field (a scheme a newcomer does not need) ends up focused and the dialog scrolled to the bottom. A
 * MutationObserver callback runs after React's commit (which does that focusing), so it can undo it: the first field
 * gets the focus without scrolling, and the dialog's content is scrolled to the top.
 * `npm run test:browser` checks the order of the schemes and the scroll position.
 */
export const AUTHORIZE_DIALOG_AT_TOP_JS = `
(function () {
  var seen = null;
  new MutationObserver(function () {
    var content = document.querySelector('.dialog-ux .modal-ux-content');
    if (content === seen) return;
    seen = content;
    if (!content) return;
    var first = content.querySelector('.auth-container input');
    if (first) first.focus({ preventScroll: true });
    content.scrollTop = 0;
  }).observe(document.documentElement, { childList: true, subtree: true });
})();
`;
