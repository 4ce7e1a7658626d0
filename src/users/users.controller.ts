import { CurrentPrincipal, Principal } from '../identity/principal';
import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../common/route-access';
import { ApiDoc, ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse } from '../common/paging';
import { AddUserRequest, UserResponse, UserSearchQuery, UserSearchResult } from './dto/user.dto';
import { UsersService } from './users.service';

@ApiTags('Users')
@Controller('api/v1')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post('user/add')
  @HttpCode(200)
  @PlatformAdminOnly()
  @ApiDoc({
    summary: 'Add a user (platform administrators only)',
    description:
      'Creates a user account with username, email and optionally the OIDC subject it signs in with, and whether it may ' +
      'create organisations or is a platform administrator.',
    errors: '409 when a user with this email, username or OIDC subject exists.',
  })
  @ApiOkResponse({ type: UserResponse })
  @ApiStandardErrors({ conflict: 'A user with this email, username or oidcId exists', notFound: false })
  async add(@Body() body: AddUserRequest): Promise<UserResponse> {
    return this.users.toResponse(await this.users.add(body));
  }

  @Get('users/search')
  @ApiDoc({
    summary: 'Find users by username prefix (at least 3 characters); at most one page',
    description:
      'The user directory is not public. A prefix matches only users who share an organisation with the caller; ' +
      'anyone else is found only by their exact username or email address (so an organisation ADMIN can add a ' +
      'person they know). Platform administrators search every user by prefix.',
  })
  @ApiPageResponse(UserSearchResult, { form: 'A', sortable: ['username', 'email'], defaultOrder: 'username' })
  @ApiStandardErrors({ notFound: false })
  search(@Query() query: UserSearchQuery, @CurrentPrincipal() principal: Principal) {
    return this.users.search(query, principal.user);
  }
}
