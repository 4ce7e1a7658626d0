import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '../identity/principal';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import {
  MessageStatusResponse,
  PersonalAccessTokenResponse,
  ProvisionPersonalAccessTokenRequest,
} from './dto/personal-access-token.dto';
import { TokensService } from './tokens.service';

@ApiTags('Personal access tokens')
@ApiStandardErrors()
@Controller('sts/v1/personal-access-tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  @Get()
  @ApiDoc({
    summary: "List the caller's personal access tokens (token values are never shown again)",
    description:
      "The caller's personal access tokens with name, type (FULL_ACCESS or READ_ONLY), IP restriction, expiry, last use and " +
      'whether each is still active; the token values are never answered again.',
  })
  @ApiOkResponse({ type: [PersonalAccessTokenResponse] })
  list(@CurrentPrincipal() p: Principal) {
    return this.tokens.list(p.user);
  }

  @Post()
  @HttpCode(200)
  @ApiDoc({
    summary: 'Provision a personal access token for the caller; `token` holds its value, shown this once',
    description:
      'Creates a personal access token for the caller and answers its value in `token`, this once: only a hash is stored. ' +
      '`type` is FULL_ACCESS (default) or READ_ONLY (GET only). `expireAt` must be in the future and at most a year ahead ' +
      '(default: the configured lifetime); `ipRestriction` is a comma-separated list of addresses or CIDR ranges the token ' +
      'may be used from. Audited, without the value.',
  })
  @ApiOkResponse({ type: PersonalAccessTokenResponse })
  provision(@CurrentPrincipal() p: Principal, @Body() body: ProvisionPersonalAccessTokenRequest) {
    return this.tokens.provision(p.user, body);
  }

  @Delete(':token_id')
  @ApiParam({ name: 'token_id', format: 'uuid', description: 'The identity of the token (not the token itself)' })
  @HttpCode(200)
  @ApiDoc({
    summary: "Revoke one of the caller's tokens; it stops working at once",
    description:
      "Revokes one of the caller's own tokens by its id; requests with it are refused (401) from then on. Revoking a token " +
      'that is already revoked answers 200 again.',
    errors: '404 when the caller has no token with this id.',
  })
  @ApiOkResponse({ type: MessageStatusResponse })
  @ApiNotFoundResponse({ description: 'No token of the caller has this id' })
  revoke(@CurrentPrincipal() p: Principal, @Param('token_id', new ParseUUIDPipe()) id: string) {
    return this.tokens.revoke(p.user, id);
  }
}
