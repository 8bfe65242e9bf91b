// An OpenID provider for the single sign-on tests: oidc-provider (OpenID Certified) with its development login
// form. Configuration comes from the environment: OIDC_PORT, OIDC_CLIENT (JSON: client_id, client_secret,
// redirect_uris, post_logout_redirect_uris) and OIDC_ACCOUNTS (JSON: {login: {groups: [...], email}}). Prints
// "ready <issuer>" when it listens.
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const issuer = `http://127.0.0.1:${port}`;
const client = JSON.parse(process.env.OIDC_CLIENT);
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS || '{}');

const provider = new Provider(issuer, {
  clients: [{
    ...client,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  }],
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups'],
  claims: {
    openid: ['sub'],
    email: ['email'],
    profile: ['preferred_username', 'given_name', 'family_name'],
    groups: ['groups'],
  },
  findAccount: async (ctx, id) => ({
    accountId: id,
    claims: async () => ({
      sub: id,
      preferred_username: id,
      email: (accounts[id] && accounts[id].email) || `${id}@example.com`,
      given_name: id,
      family_name: 'Tester',
      groups: (accounts[id] && accounts[id].groups) || [],
    }),
  }),
  features: {
    devInteractions: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  cookies: { keys: ['trainer-portal-test-only-cookie-key'] },
  ttl: { IdToken: 3600, AccessToken: 3600, Session: 3600, Interaction: 600, Grant: 3600 },
  // Every scope is granted without a consent page (a first-party client, as a company IdP configures it).
  loadExistingGrant: async (ctx) => {
    const grant = new provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile groups');
    await grant.save();
    return grant;
  },
});
provider.proxy = false;

provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
