import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Principal } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import {
  MessageStatusResponse,
  PersonalAccessTokenResponse,
  ProvisionPersonalAccessTokenRequest,
} from './dto/personal-access-token.dto';
import { TokensService } from './tokens.service';

@ApiTags('Personal access tokens')
@ApiStandardErrors({ forbidden: false })
@Controller('sts/v1/personal-access-tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  @Get()
  @ApiOperation({ summary: "List the caller's personal access tokens (token values are never shown again)" })
  @ApiOkResponse({ type: [PersonalAccessTokenResponse] })
  list(@CurrentPrincipal() p: Principal) {
    return this.tokens.list(p.user);
  }

  @Post()
  @HttpCode(200)
  @ApiOperation({ summary: 'Provision a personal access token for the caller; `token` holds its value, shown this once' })
  @ApiOkResponse({ type: PersonalAccessTokenResponse })
  provision(@CurrentPrincipal() p: Principal, @Body() body: ProvisionPersonalAccessTokenRequest) {
    return this.tokens.provision(p.user, body);
  }

  @Delete(':token_id')
  @ApiParam({ name: 'token_id', format: 'uuid', description: 'The identity of the token (not the token itself)' })
  @HttpCode(200)
  @ApiOperation({ summary: "Revoke one of the caller's tokens; it stops working at once" })
  @ApiOkResponse({ type: MessageStatusResponse })
  @ApiNotFoundResponse({ description: 'No token of the caller has this id' })
  revoke(@CurrentPrincipal() p: Principal, @Param('token_id', new ParseUUIDPipe()) id: string) {
    return this.tokens.revoke(p.user, id);
  }
}
